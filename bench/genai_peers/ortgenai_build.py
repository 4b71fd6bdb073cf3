"""ONNX Runtime GenAI's own form of a decoder made by scripts/decoder_zoo.py (run with the project
venv): the SAME weights, rebuilt and run through onnxruntime-genai's model builder in .venv-ortgenai.

    .venv/bin/python bench/genai_peers/ortgenai_build.py models/llama-tiny models/llama-tiny-ortgenai

Why not the export itself: ONNX Runtime GenAI loads it (its genai_config.json) and its Generator
decodes it right, but its Engine batches it wrong at unequal prompt lengths (it masks as if each new
token's KV went at the sequence's own length: the builder's GroupQueryAttention layout, a KV buffer
shared between steps, not an Optimum export's concatenation), and it runs the export 1.4x (one
sequence) to 3.8x (16) slower than the builder's model, which is what ORT GenAI users run.
The builder reads a Hugging Face checkpoint and needs transformers 5 and torch 2 (in .venv-ortgenai,
bench/setup-peers); the project venv's transformers 4.38 and Debian's torch 1.13 are the ones that
made the export, so the checkpoint is rebuilt here from decoder_zoo's seed and checked weight by
weight against the export's initializers before the builder (-p fp32 -e cpu: f32 weights, f32 KV
cache) converts it. converted_from.json, written last, makes the folder complete.
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
STAMP = "converted_from.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "generation_config.json")


def source_stamp(onnx_path):
    """What the folder was built from: the export, and .venv-ortgenai's pins (a new builder rebuilds)."""
    st = onnx_path.stat()
    pins = ROOT / ".venv-ortgenai" / ".requirements-stamp"
    return {"source": str(onnx_path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "builder": "onnxruntime_genai.models.builder -p fp32 -e cpu",
            "venv": pins.read_text() if pins.is_file() else None}


def rebuild_checkpoint(src_dir, hf_dir):
    """decoder_zoo's model of this config (seed 0), saved as a Hugging Face checkpoint, after a check
    that each of its weights (or its transpose) is one of the export's initializers."""
    import onnx
    from onnx import numpy_helper

    import decoder_zoo
    config = json.loads((src_dir / "config.json").read_text())
    if config.get("model_type") != "llama":
        sys.exit(f"ortgenai_build: {src_dir} is not a decoder_zoo llama (model_type "
                 f"{config.get('model_type')})")
    differ = [k for k, v in decoder_zoo.LLAMA.items() if config.get(k) != v]
    if differ:
        sys.exit(f"ortgenai_build: {src_dir}/config.json is not decoder_zoo's llama ({', '.join(differ)})")
    lm = decoder_zoo._model("llama")
    model = onnx.load(str(src_dir / "model.onnx"))
    inits = {}
    for t in model.graph.initializer:
        a = numpy_helper.to_array(t)
        inits.setdefault(a.shape, []).append(a)
    for name, p in lm.state_dict().items():
        w = p.detach().numpy()
        candidates = inits.get(w.shape, []) + [c.T for c in inits.get(w.T.shape, []) if w.ndim == 2]
        if not any(np.array_equal(w, c) for c in candidates):
            sys.exit(f"ortgenai_build: {name} of the rebuilt model is not in {src_dir}/model.onnx: "
                     "the export was not made from decoder_zoo's seed")
    lm.save_pretrained(hf_dir, safe_serialization=True)
    for name in TOKENIZER_FILES:
        if (src_dir / name).is_file():
            (hf_dir / name).write_bytes((src_dir / name).read_bytes())


def build(src_dir, out_dir):
    src_dir, out_dir = Path(src_dir).resolve(), Path(out_dir).resolve()
    onnx_path = src_dir / "model.onnx"
    if not onnx_path.is_file():
        sys.exit(f"ortgenai_build: {onnx_path} not found (run scripts/get-models)")
    try:
        if json.loads((out_dir / STAMP).read_text()) == source_stamp(onnx_path):
            print(f"ortgenai_build: {out_dir} is current", file=sys.stderr)
            return
    except (OSError, ValueError):
        pass
    python = ROOT / ".venv-ortgenai" / "bin" / "python"
    if not python.is_file():
        sys.exit("ortgenai_build: .venv-ortgenai is missing (bench/setup-peers ortgenai)")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / STAMP).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="ortgenai_build.") as tmp:
        hf_dir, cache = Path(tmp) / "hf", Path(tmp) / "cache"
        rebuild_checkpoint(src_dir, hf_dir)
        r = subprocess.run([str(python), "-m", "onnxruntime_genai.models.builder", "-i", str(hf_dir),
                            "-o", str(out_dir), "-p", "fp32", "-e", "cpu", "-c", str(cache)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            tail = (r.stdout + r.stderr).strip().splitlines()[-8:]
            sys.exit("ortgenai_build: the model builder failed:\n    " + "\n    ".join(tail))
    (out_dir / STAMP).write_text(json.dumps(source_stamp(onnx_path), indent=1) + "\n")
    print(f"ortgenai_build: wrote {out_dir} (ONNX Runtime GenAI model builder, f32)", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[3].strip())
    build(sys.argv[1], sys.argv[2])
