"""OpenVINO measurement worker for bench/compare-ort; runs under .venv-openvino's python.

OpenVINO pins numpy 2, which the project venv cannot take, so compare-ort starts this script in
OpenVINO's own venv (bench/setup-peers makes it) and talks to it in JSON, one object per line:
requests on stdin, one reply per request on stdout. Inputs come as .npy files that compare-ort
wrote from the same arrays it feeds ONNX Runtime.

  {"op": "info"}
      -> {"version": "2026.4.1-...", "device": "CPU full name"}
  {"op": "compile", "key": K, "model": PATH, "threads": T, "inputs": {NAME: NPY}, "outputs_dir": D}
      read_model, reshape to the inputs' shapes, compile for the CPU plugin with
      INFERENCE_NUM_THREADS=T, PERFORMANCE_HINT=LATENCY, INFERENCE_PRECISION_HINT=f32; run once
      and write every output to D/<index>.npy (graph output order)
      -> {"seconds": compile time, "properties": {the compiled model's threading properties}}
  {"op": "bench", "key": K, "batch": B, "seconds": X, "warmup": W}
      -> timing.time_runs' result: W untimed inferences, then timed ones for X s (at least 5)
Any failure -> {"error": "one line"}. The worker exits at end of input.
"""
import json
import os
import signal
import sys
import time

import numpy as np
import openvino as ov

from timing import time_runs

OPS = ("info", "compile", "bench")
REPORTED = ["INFERENCE_NUM_THREADS", "NUM_STREAMS", "ENABLE_CPU_PINNING",
            "INFERENCE_PRECISION_HINT", "PERFORMANCE_HINT"]


def show(value):
    """A property as text: element types by their short name (f32), enums without their class."""
    if isinstance(value, ov.Type):
        return value.to_string()
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else str(value)


class Worker:
    def __init__(self):
        self.core = ov.Core()
        self.compiled = {}  # key -> (infer request, feeds)

    def info(self, _req):
        return {"version": ov.get_version(),
                "device": self.core.get_property("CPU", "FULL_DEVICE_NAME")}

    def compile(self, req):
        t0 = time.perf_counter()
        feeds = {n: np.load(p, allow_pickle=False) for n, p in req["inputs"].items()}
        model = self.core.read_model(req["model"])
        model.reshape({n: list(a.shape) for n, a in feeds.items()})
        compiled = self.core.compile_model(model, "CPU", {
            "INFERENCE_NUM_THREADS": int(req["threads"]),
            "PERFORMANCE_HINT": "LATENCY",
            "INFERENCE_PRECISION_HINT": "f32"})
        request = compiled.create_infer_request()
        outputs = request.infer(feeds, share_inputs=True)
        os.makedirs(req["outputs_dir"], exist_ok=True)
        for i, port in enumerate(compiled.outputs):
            np.save(os.path.join(req["outputs_dir"], f"{i}.npy"), outputs[port])
        self.compiled[req["key"]] = (request, feeds)
        return {"seconds": time.perf_counter() - t0,
                "properties": {k: show(compiled.get_property(k)) for k in REPORTED}}

    def bench(self, req):
        request, feeds = self.compiled[req["key"]]
        # share_inputs: no copy of the inputs per call; ORT and fusor read them in place too.
        return time_runs(lambda: request.infer(feeds, share_inputs=True, share_outputs=True),
                         int(req["batch"]), float(req["seconds"]), int(req["warmup"]))


def main():
    # Ctrl-C is compare-ort's to handle: it closes our stdin, and we exit at end of input.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # Replies go to a private copy of stdout; anything OpenVINO prints lands on stderr.
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    worker = Worker()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
            if req.get("op") not in OPS:
                raise ValueError(f"unknown op {req.get('op')!r}")
            reply = getattr(worker, req["op"])(req)
        except Exception as e:  # noqa: BLE001 - every failure becomes a reply, not a dead pipe
            # OpenVINO's messages span lines (source location first): keep them all, on one.
            text = " ".join(str(e).split())
            reply = {"error": f"{type(e).__name__}: {text[:600]}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
