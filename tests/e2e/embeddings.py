#!/usr/bin/env python3
"""Sentence similarity with all-MiniLM-L6-v2: an end-to-end check on real weights and real text.

Tokenizes SENTENCE_PAIRS with the tokenizer files beside models/minilm-l6/model.onnx, padded to
the longest sentence in the batch (so the batch has attention_mask zeros, right padding), runs a
model callable for last_hidden_state, mean-pools over the attention mask, L2-normalizes and
returns the cosine similarity of each pair.

    similarities(run) -> np.ndarray[len(pairs)]
        run(input_ids, attention_mask, token_type_ids) -> last_hidden_state [B, S, 384] float32;
        the three arrays are int64 [B, S].
    ort_runner(model) / fusor_runner(fusor, model) -> such callables

CLI: embeddings.py [--model M] [--fusor build/fusor] [--atol 1e-5] [--quantized Q]
  prints ORT's similarities; with --fusor, also fusor's and their difference; exit 1 if any
  similarity differs by more than atol or ORT's similarities fail the sanity ordering. With
  --quantized (an int8 export of the model, e.g. models/minilm-l6-int8/model.onnx) and --fusor,
  also fusor's similarities on it beside the float ones: exit 1 if any is more than
  QUANTIZED_ATOL from the float model's (ORT's).
"""
import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = ROOT / "models" / "minilm-l6" / "model.onnx"
MAX_LENGTH = 128
# How far an 8-bit model's cosine similarities may be from the float model's (issue #19).
QUANTIZED_ATOL = 0.01

# (a, b, related): related pairs should score higher than unrelated ones. Lengths differ widely,
# so the shorter sentences carry many padding positions in the batch.
SENTENCE_PAIRS = [
    ("A man is eating food.", "A man is eating a piece of bread.", True),
    ("The cat sits on the mat.", "A dog is playing in the park with a red ball.", False),
    ("How do I reset my password?",
     "What are the steps to change the password of my account if I have forgotten it?", True),
    ("The stock market fell sharply on Monday after the central bank raised interest rates "
     "by half a percentage point, surprising most analysts.", "Bananas are yellow.", False),
    ("Inference engines fuse small operators into larger kernels.",
     "Kernel fusion merges many small operations into fewer, bigger ones.", True),
]


def load_tokenizer(model_dir):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(Path(model_dir) / "tokenizer.json"))
    tok.enable_truncation(max_length=MAX_LENGTH)
    # tokenizer.json pads to a fixed 128; pad to the batch's longest sentence instead.
    pad_id = tok.token_to_id("[PAD]")
    tok.enable_padding(direction="right", pad_id=pad_id, pad_type_id=0, pad_token="[PAD]")
    return tok


def encode(tokenizer, sentences):
    """(input_ids, attention_mask, token_type_ids), int64 [len(sentences), longest]."""
    enc = tokenizer.encode_batch(list(sentences))
    ids = np.array([e.ids for e in enc], dtype=np.int64)
    mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
    tt = np.array([e.type_ids for e in enc], dtype=np.int64)
    return ids, mask, tt


def mean_pool(last_hidden_state, attention_mask):
    m = attention_mask.astype(np.float64)[:, :, None]
    summed = (last_hidden_state.astype(np.float64) * m).sum(axis=1)
    return summed / np.maximum(m.sum(axis=1), 1e-9)


def l2_normalize(x):
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def embed(run, sentences, model_dir=DEFAULT_MODEL.parent):
    tok = load_tokenizer(model_dir)
    ids, mask, tt = encode(tok, sentences)
    h = np.asarray(run(ids, mask, tt))
    if h.shape[:2] != ids.shape:
        raise ValueError(f"last_hidden_state has shape {h.shape}, inputs {ids.shape}")
    return l2_normalize(mean_pool(h, mask))


def similarities(run, pairs=SENTENCE_PAIRS, model_dir=DEFAULT_MODEL.parent):
    """Cosine similarity of each (a, b) pair; all 2*len(pairs) sentences go in one batch."""
    sentences = [p[0] for p in pairs] + [p[1] for p in pairs]
    e = embed(run, sentences, model_dir)
    n = len(pairs)
    return np.sum(e[:n] * e[n:], axis=1)


def sane(sims, pairs=SENTENCE_PAIRS):
    """Every related pair scores above every unrelated pair (a check on real weights)."""
    rel = [s for s, p in zip(sims, pairs) if p[2]]
    unrel = [s for s, p in zip(sims, pairs) if not p[2]]
    return min(rel) > max(unrel)


def ort_runner(model=DEFAULT_MODEL, threads=2, level="all"):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from ort_compare import ort_session
    s = ort_session(model, threads, level)

    def run(input_ids, attention_mask, token_type_ids):
        return s.run(["last_hidden_state"], {"input_ids": input_ids,
                                             "attention_mask": attention_mask,
                                             "token_type_ids": token_type_ids})[0]
    return run


def fusor_runner(fusor=ROOT / "build" / "fusor", model=DEFAULT_MODEL, extra=()):
    """Runs `fusor run` through the CLI with .npy files in a temporary directory."""
    def run(input_ids, attention_mask, token_type_ids):
        with tempfile.TemporaryDirectory(prefix="fusor-emb.") as d:
            d = Path(d)
            args = []
            for name, a in (("input_ids", input_ids), ("attention_mask", attention_mask),
                            ("token_type_ids", token_type_ids)):
                np.save(d / f"{name}.npy", np.ascontiguousarray(a, dtype=np.int64))
                args += ["--input", f"{name}={d / (name + '.npy')}"]
            cmd = [str(fusor), "run", str(model), *args, "--output-dir", str(d / "out"), *extra]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}\n{r.stdout}{r.stderr}")
            return np.load(d / "out" / "last_hidden_state.npy")
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description="MiniLM sentence similarity: ORT vs fusor")
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--fusor", help="fusor binary; if given, compare its similarities with ORT's")
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--quantized", help="int8 export of the model: its fusor similarities beside the float ones")
    a = ap.parse_args(argv)
    model_dir = Path(a.model).parent
    ref = similarities(ort_runner(a.model), model_dir=model_dir)
    ok = sane(ref)
    got = q = None
    if a.fusor:
        got = similarities(fusor_runner(a.fusor, a.model), model_dir=model_dir)
        if a.quantized:
            q = similarities(fusor_runner(a.fusor, a.quantized), model_dir=model_dir)
    for i, (s1, s2, related) in enumerate(SENTENCE_PAIRS):
        line = f"{'related  ' if related else 'unrelated'} ort {ref[i]:.6f}"
        if got is not None:
            line += f"  fusor {got[i]:.6f}  diff {abs(got[i] - ref[i]):.2e}"
        if q is not None:
            line += f"  int8 {q[i]:.6f}  diff {abs(q[i] - ref[i]):.2e}"
        print(f"{line}  | {s1[:40]!r} ~ {s2[:40]!r}")
    if not ok:
        print("FAIL: ORT similarities do not rank related pairs above unrelated ones")
    if got is not None:
        diff = float(np.max(np.abs(got - ref)))
        print(f"max |fusor - ort| = {diff:.2e} (atol {a.atol:g})")
        ok = ok and diff <= a.atol
    if q is not None:
        qdiff = float(np.max(np.abs(q - ref)))
        print(f"max |fusor int8 - ort float| = {qdiff:.2e} (atol {QUANTIZED_ATOL:g})")
        ok = ok and qdiff <= QUANTIZED_ATOL
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
