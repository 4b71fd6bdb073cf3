#!/usr/bin/env python3
"""MiniLM as ONNX Runtime's transformer optimizer leaves it: fused contrib ops (domain com.microsoft).

    .venv/bin/python scripts/make-ort-optimized-minilm.py           # build what is missing
    .venv/bin/python scripts/make-ort-optimized-minilm.py --force   # rebuild

Reads models/minilm-l6/model.onnx (scripts/get-models makes it) and writes
  models/minilm-l6-ort/model.onnx          optimize_model(model_type="bert"): EmbedLayerNormalization
                                           (its mask_index output: valid length per row), Attention
                                           with packed QKV, SkipLayerNormalization, BiasGelu
  models/minilm-l6-ort-rawmask/model.onnx  the same with use_raw_attention_mask: Attention reads the
                                           2-D int32 attention_mask itself
Each is checked against the plain model in ONNX Runtime on an input with right padding, written
to a temporary file and renamed into place, so a cached file is always complete. No network.
"""
import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "models" / "minilm-l6" / "model.onnx"
VARIANTS = {"minilm-l6-ort": False, "minilm-l6-ort-rawmask": True}  # name -> raw 2-D mask


def log(msg):
    print(f"[make-ort-optimized-minilm] {msg}", flush=True)


def run(path, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feeds)[0]


def make(name, raw_mask, config):
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    out = ROOT / "models" / name / "model.onnx"
    out.parent.mkdir(parents=True, exist_ok=True)
    options = FusionOptions("bert")
    options.use_raw_attention_mask(raw_mask)
    model = optimizer.optimize_model(str(SOURCE), model_type="bert", num_heads=config["num_attention_heads"],
                                     hidden_size=config["hidden_size"], optimization_options=options,
                                     opt_level=0, use_gpu=False)
    ops = Counter(f"{n.domain + '.' if n.domain else ''}{n.op_type}" for n in model.model.graph.node)
    log(f"{name}: {sum(ops.values())} nodes: " + ", ".join(f"{k} {v}" for k, v in ops.most_common()))
    if not any(n.domain == "com.microsoft" and n.op_type == "Attention" for n in model.model.graph.node):
        sys.exit(f"make-ort-optimized-minilm: {name}: the optimizer fused no Attention")
    tmp = out.with_suffix(".onnx.tmp")
    model.save_model_to_file(str(tmp))

    # Right padding only: ORT's mask_index (valid lengths) assumes it.
    rng = np.random.default_rng(1)
    ids = rng.integers(0, config["vocab_size"], (3, 21), dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1, 15:] = 0
    mask[2, 7:] = 0
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    want, got = run(SOURCE, feeds), run(tmp, feeds)
    valid = mask.astype(bool)  # padded positions' outputs are don't-care in the plain model
    err = float(np.abs(got - want)[valid].max())
    log(f"  optimized vs plain in ORT, [3,21] with padding: max abs err {err:.2e}")
    if err > 1e-3:
        os.remove(tmp)
        sys.exit(f"make-ort-optimized-minilm: {name}: the optimized model differs from the plain one")
    os.replace(tmp, out)
    log(f"  wrote {out.relative_to(ROOT)} ({out.stat().st_size / 1e6:.1f} MB)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--force", action="store_true", help="rebuild even if the outputs exist")
    a = ap.parse_args()
    todo = [n for n in VARIANTS if a.force or not (ROOT / "models" / n / "model.onnx").is_file()]
    if not todo:
        log("cached")
        return
    if not SOURCE.is_file():
        sys.exit(f"make-ort-optimized-minilm: {SOURCE} is missing: run scripts/get-models --only minilm-l6")
    config = json.loads((SOURCE.parent / "config.json").read_text())
    for name in todo:
        make(name, VARIANTS[name], config)


if __name__ == "__main__":
    main()
