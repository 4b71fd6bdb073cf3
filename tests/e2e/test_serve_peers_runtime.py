"""bench/serve_peers/ort_runtime.py, the MLServer peer of bench/serve-peers: requests of different
lengths that arrive together are run as one padded batch, and each answer equals ONNX Runtime on
that request alone, cut back to its own length. Runs inside .venv-mlserver (bench/setup-serve-peers
makes it); skipped where it is missing."""
import json
import subprocess

import pytest

from conftest import ROOT, model_path

MLSERVER_PYTHON = ROOT / ".venv-mlserver" / "bin" / "python"

# Run in MLServer's venv: twelve concurrent predict() calls of lengths 1..40 (with rows 2 in one),
# the session's runs recorded, each answer compared with the session on that request alone.
SCRIPT = r"""
import asyncio, json, sys
import numpy as np
from mlserver.codecs import NumpyCodec
from mlserver.settings import ModelParameters, ModelSettings
from mlserver.types import InferenceRequest
import ort_runtime

async def main(model):
    settings = ModelSettings(name="m", implementation=ort_runtime.OrtRuntime, max_batch_size=1,
                             parameters=ModelParameters(uri=model, extra={
                                 "intra_op_threads": 1, "max_batch_size": 8, "max_batch_time_ms": 50}))
    rt = ort_runtime.OrtRuntime(settings)
    await rt.load()
    runs, solo = [], rt._session.run
    def recording(names, feeds):
        runs.append([list(v.shape) for v in feeds.values()] + [feeds["attention_mask"].sum(axis=1).tolist()])
        return solo(names, feeds)
    rt._session.run = recording
    rng = np.random.default_rng(0)
    shapes = [(1, 1), (1, 40), (2, 17), (1, 2)] + [(1, int(n)) for n in rng.integers(1, 41, 8)]
    feeds = []
    for rows, n in shapes:
        ids = rng.integers(1000, 30522, (rows, n)).astype(np.int64)
        feeds.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})
    reqs = [InferenceRequest(inputs=[NumpyCodec.encode_input(k, v) for k, v in f.items()]) for f in feeds]
    answers = await asyncio.gather(*(rt.predict(r) for r in reqs))
    batched_runs = list(runs)
    worst = 0.0
    for f, ans in zip(feeds, answers):
        got = NumpyCodec.decode_output(ans.outputs[0])
        want = solo(None, f)[0]
        if got.shape != want.shape:
            print(json.dumps({"error": f"shape {got.shape} != {want.shape}"})); return
        worst = max(worst, float(np.max(np.abs(got - want) / (1e-5 + 1e-4 * np.abs(want)))))
    print(json.dumps({"runs": batched_runs, "worst": worst}))

asyncio.run(main(sys.argv[1]))
"""


def test_ort_runtime_pads_mixed_lengths_and_cuts_each_answer_back(tmp_path):
    if not MLSERVER_PYTHON.exists():
        pytest.skip(".venv-mlserver is missing (bench/setup-serve-peers makes it)")
    r = subprocess.run([MLSERVER_PYTHON, "-c", SCRIPT, str(model_path("minilm-l6"))], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path,
                       env={"PYTHONPATH": str(ROOT / "bench" / "serve_peers"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert "error" not in out, out
    # 13 rows in batches of at most 8 requests: a batch of unequal lengths, padded to its longest.
    assert sum(run[0][0] for run in out["runs"]) == 13, out["runs"]
    mixed = [run for run in out["runs"] if len(set(run[-1])) > 1]
    assert mixed, out["runs"]
    assert all(run[0][1] == max(run[-1]) for run in out["runs"]), out["runs"]
    # Each answer within |a - b| <= 1e-5 + 1e-4 |b| of the request run alone (issue #15's bound).
    assert out["worst"] <= 1.0, out
