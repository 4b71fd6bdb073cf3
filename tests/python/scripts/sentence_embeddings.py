#!/usr/bin/env python3
"""Sentence embeddings with all-MiniLM-L6-v2, the way sentence-transformers users write it for
ONNX Runtime: tokenize, run, mean-pool over the attention mask, L2-normalize.

    sentence_embeddings.py MODEL_DIR OUT.npy
tests/python/test_ort_scripts.py runs it as is and with its import changed to fusor."""
import sys

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The new movie is awesome and everyone should see it this weekend.",
    "Kernel fusion merges many small operations into fewer, bigger ones.",
]


def main(model_dir, out):
    tokenizer = Tokenizer.from_file(f"{model_dir}/tokenizer.json")
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    tokenizer.enable_truncation(max_length=128)
    encoded = tokenizer.encode_batch(SENTENCES)
    input_ids = np.array([e.ids for e in encoded], dtype=np.int64)
    attention_mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
    token_type_ids = np.zeros_like(input_ids)

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(f"{model_dir}/model.onnx", options, providers=["CPUExecutionProvider"])
    input_names = {i.name for i in session.get_inputs()}
    feed = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
    token_embeddings = session.run(None, {k: v for k, v in feed.items() if k in input_names})[0]

    mask = attention_mask[..., None].astype(np.float32)
    pooled = (token_embeddings * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
    embeddings = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
    print("similarity(0, 1) = %.4f, similarity(0, 2) = %.4f" % (embeddings[0] @ embeddings[1],
                                                                  embeddings[0] @ embeddings[2]))
    np.save(out, embeddings)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
