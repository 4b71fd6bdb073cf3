"""Checks shared by the e2e files that build a decoder export and compare fusor with ONNX Runtime:
ONNX Runtime's greedy tokens, one prompt on the paged KV cache, a --batch of prompts stepped
together, and fusor serve answering concurrent greedy completions with fusor generate's text."""
import json
import shutil
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort

from conftest import MODELS, model_path, run_fusor
from serve_util import Served, post


def ort_greedy(folder, prompt, n):
    """ONNX Runtime's greedy ids after `prompt`, for an export whose outputs are the logits, then
    the presents in the past inputs' order: each step's present fed back as the past, the mask over
    every position so far, and position_ids where the model takes them."""
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    past = {name: np.zeros((1, i.shape[1], 0, i.shape[3]), np.float16 if i.type == "tensor(float16)" else np.float32)
            for name, i in inputs.items() if name.startswith("past_key_values.")}
    ids, out, feed_ids = list(prompt), [], list(prompt)
    for _ in range(n):
        start = len(ids) - len(feed_ids)
        feeds = {"input_ids": np.array([feed_ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64), **past}
        if "position_ids" in inputs:
            feeds["position_ids"] = np.arange(start, len(ids), dtype=np.int64)[None]
        res = session.run(None, feeds)
        token = int(res[0][0, -1].astype(np.float32).argmax())
        out.append(token)
        ids.append(token)
        feed_ids = [token]
        past = {name: res[1 + j] for j, name in enumerate(past)}
    return out


def generate_on_paged_cache(folder, prompt, n):
    """fusor generate's greedy ids for `prompt`, asserting that the paged KV cache ran them."""
    r = run_fusor("generate", str(folder), "--prompt-ids", ",".join(map(str, prompt)), "--max-new-tokens", str(n),
                  "--ignore-eos", "--json", "--stats")
    assert r.returncode == 0, r.stderr
    assert "paged KV cache" in r.stderr, r.stderr
    return json.loads(r.stdout)["output_ids"]


def generate_batch(folder, prompts, n, tmp_path):
    """fusor generate --batch's greedy ids per prompt, each starting a step after the one before,
    asserting that they shared steps."""
    lines = tmp_path / "prompts.jsonl"
    lines.write_text("".join(json.dumps({"prompt_ids": p, "start_step": 2 * k}) + "\n" for k, p in enumerate(prompts)))
    r = run_fusor("generate", str(folder), "--batch", str(lines), "--max-new-tokens", n, "--ignore-eos", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["steps"] < len(prompts) * n  # they really ran together
    return [seq["output_ids"] for seq in out["sequences"]]


def assert_served_like_generate(folder, prompts, tmp_path, config=""):
    """Concurrent greedy /v1/completions give fusor generate's text (llama-tiny's tokenizer names
    the ids; a test model's vocabulary is its first ids)."""
    model_path("llama-tiny")
    served = tmp_path / "served"
    shutil.copytree(folder, served)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(MODELS / "llama-tiny" / name, served / name)
    expected = []
    for p in prompts:
        r = run_fusor("generate", str(served), "--prompt-ids", ",".join(map(str, p)), "--max-new-tokens", 10,
                      "--ignore-eos", "--json")
        assert r.returncode == 0, r.stderr
        expected.append(json.loads(r.stdout)["text"])
    s = Served(tmp_path, config=config, models=[("decoder", served)])
    try:
        assert "generative (continuous batching)" in s.output()

        def complete(p):
            body = {"model": "decoder", "prompt": p, "max_tokens": 10, "temperature": 0, "ignore_eos": True}
            status, out = post(f"{s.url}/v1/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
            assert status == 200, out
            return json.loads(out)["choices"][0]["text"]

        with ThreadPoolExecutor(len(prompts)) as pool:
            assert list(pool.map(complete, prompts)) == expected
    finally:
        assert s.stop() == 0, s.output()
