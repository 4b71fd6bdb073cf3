"""Helpers shared by scripts/get-models and scripts/model_zoo.py: logging, the cache test, the
checked export into a temporary file, and the ONNX Runtime vs reference comparison."""
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"
T0 = time.time()


def log(msg):
    print(f"[get-models {time.time() - T0:6.1f}s] {msg}", flush=True)


def cached(out_dir: Path, files) -> bool:
    return all((out_dir / f).is_file() and (out_dir / f).stat().st_size > 0 for f in files)


def export(model, args, path: Path, **kw):
    """torch.onnx.export into path via a temporary file; returns (tmp path, loaded onnx model)."""
    import onnx
    import torch
    tmp = path.with_suffix(".onnx.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(model, args, str(tmp), export_params=True, do_constant_folding=True,
                          training=torch.onnx.TrainingMode.EVAL, **kw)
    m = onnx.load(str(tmp))
    onnx.checker.check_model(m)
    return tmp, m


def op_histogram(m) -> str:
    from collections import Counter
    c = Counter(n.op_type for n in m.graph.node)
    return f"{len(m.graph.node)} nodes: " + ", ".join(f"{k} {v}" for k, v in c.most_common())


def ort_run(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def check_close(name, got, want, atol, rtol, against="torch"):
    import numpy as np
    err = np.abs(got - want)
    ok = bool(np.all(err <= atol + rtol * np.abs(want)))
    log(f"  {name}: ORT vs {against} max abs err {err.max():.3e} -> {'ok' if ok else 'MISMATCH'}")
    if not ok:
        sys.exit(f"get-models: {name}: ONNX Runtime output differs from {against}")


def finish(tmp: Path, path: Path):
    """Rename the checked temporary export into place."""
    os.replace(tmp, path)
    log(f"  wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1e6:.1f} MB)")
