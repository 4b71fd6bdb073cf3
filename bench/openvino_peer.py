"""compare-ort's handle on OpenVINO: the worker (bench/openvino_worker.py) in its own venv.

The venv is made by bench/setup-peers; the first use runs it (about 10 s with a warm pip cache).
"""
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
VENV = ROOT / ".venv-openvino"


def ensure_venv(log):
    """Create .venv-openvino via bench/setup-peers if it is missing or out of date."""
    if not (VENV / "bin" / "python").is_file():
        log(f"  OpenVINO: {VENV.name} is missing; creating it (bench/setup-peers openvino)")
    r = subprocess.run([str(BENCH / "setup-peers"), "openvino"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("bench/setup-peers openvino failed:\n    "
                           + "\n    ".join((r.stdout + r.stderr).strip().splitlines()[-6:]))


class OpenVino:
    """One worker process for the whole run; one compiled model per batch size."""

    def __init__(self, log):
        ensure_venv(log)
        self.dir = tempfile.TemporaryDirectory(prefix="compare-ort.openvino.")
        self.proc = subprocess.Popen([str(VENV / "bin" / "python"), str(BENCH / "openvino_worker.py")],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        info = self.ask({"op": "info"})
        self.version = info["version"].split("-")[0]
        self.device = info["device"]

    def ask(self, req):
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"OpenVINO worker exited ({self.proc.wait()}) during {req['op']}")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(f"OpenVINO {req['op']}: {reply['error']}")
        return reply

    def compile(self, model, batch, feeds, threads):
        """Compile for these inputs (saved as .npy so the worker sees the same data).

        Returns (compile reply, [outputs in graph order]) for a check against ONNX Runtime."""
        d = Path(self.dir.name) / f"b{batch}"
        (d / "in").mkdir(parents=True, exist_ok=True)
        paths = {}
        for i, (name, a) in enumerate(feeds.items()):
            paths[name] = str(d / "in" / f"{i}.npy")
            np.save(paths[name], a, allow_pickle=False)
        reply = self.ask({"op": "compile", "key": str(batch), "model": str(model),
                          "threads": threads, "inputs": paths, "outputs_dir": str(d / "out")})
        outs = sorted((d / "out").glob("*.npy"), key=lambda p: int(p.stem))
        return reply, [np.load(p, allow_pickle=False) for p in outs]

    def bench(self, batch, seconds, warmup):
        return self.ask({"op": "bench", "key": str(batch), "batch": batch,
                         "seconds": seconds, "warmup": warmup})

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.dir.cleanup()
