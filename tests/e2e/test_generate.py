"""`fusor generate` (issue #16) against transformers and Hugging Face tokenizers.

Greedy parity: the decoders' greedy_reference.json holds transformers' generate() of 64 new tokens
for 20 prompts of 1-200 tokens (scripts/greedy_reference.py); fusor must pick the same tokens.
Where the reference's two best logits are within 1e-5 (a true tie) either token is accepted and
the run continues teacher-forced: fusor is restarted on the prompt plus the reference's tokens so
far. With the paged KV cache (the default) all 20 prompts of both models run (a few seconds each),
and 8 of them again together, joining at different steps (`--batch`). The unfused plain loop
plans every past length anew (docs/generate.md), so by default two prompts per model check it;
FUSOR_GENERATE_ALL=1 runs all 20 of both models that way too (~10 minutes).
The rest: the merged export, text in and out, EOS and stop strings, sampling, the repetition
penalty (against transformers' logits processor over ONNX Runtime's logits), errors.
"""
import json
import os
import shutil

import numpy as np
import pytest
from tokenizers import Tokenizer

from conftest import MODELS, ROOT, model_path, run_fusor

TIE = 1e-5
ALL = os.environ.get("FUSOR_GENERATE_ALL") == "1"
# Short and long, text and random ids (even indexes are text pieces, odd ones random ids).
SUBSET = {"llama-tiny": (2, 19), "gpt2-tiny": (0, 7, 16)}
TRUE_TIES = {}  # (model, prompt index) -> steps accepted as true ties


def reference(model):
    model_path(model)
    return json.loads((MODELS / model / "greedy_reference.json").read_text())


def ids_arg(ids):
    return ",".join(map(str, ids))


def generate(model, *args):
    """`fusor generate MODEL ARGS --json`: the parsed object (the run must succeed)."""
    r = run_fusor("generate", MODELS / model, *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def greedy(model, prompt_ids, n, *args):
    return generate(model, "--prompt-ids", ids_arg(prompt_ids), "--max-new-tokens", n, "--ignore-eos", *args)


def check_greedy_parity(model, case, *args):
    """fusor's greedy tokens equal the reference's, but for true ties; returns how many ties."""
    expected, gaps = case["output_ids"], case["top2_gap"]
    got, ties = [], 0
    while len(got) < len(expected):
        out = greedy(model, case["prompt_ids"] + got, len(expected) - len(got), *args)
        assert out["finish_reason"] == "length" and len(out["output_ids"]) == len(expected) - len(got)
        for token in out["output_ids"]:
            step = len(got)
            if token != expected[step]:
                assert gaps[step] < TIE, (f"step {step}: fusor chose {token}, transformers {expected[step]} "
                                          f"(top-2 gap {gaps[step]:.3g}); fusor so far {got}")
                ties += 1
                got.append(expected[step])  # teacher-forced from here
                break
            got.append(token)
    return ties


def parity_cases(subset):
    for model in ("llama-tiny", "gpt2-tiny"):
        for i in subset(model):
            yield pytest.param(model, i, id=f"{model}-{i}")


@pytest.mark.parametrize("model,index", parity_cases(lambda model: range(20)))
def test_greedy_parity_with_transformers(model, index):
    case = reference(model)["prompts"][index]
    ties = check_greedy_parity(model, case)
    TRUE_TIES[(model, index)] = ties
    print(f"{model} prompt {index} ({len(case['prompt_ids'])} tokens): 64 tokens equal, {ties} true ties accepted")


@pytest.mark.parametrize("model,index", parity_cases(lambda model: range(20) if ALL else SUBSET[model]))
def test_greedy_parity_unfused(model, index):
    """The unfused plain loop too: the reference the KV-cache fusion is checked against."""
    case = reference(model)["prompts"][index]
    ties = check_greedy_parity(model, case, "--no-fusion")
    print(f"{model} prompt {index} unfused: 64 tokens equal, {ties} true ties accepted")


@pytest.mark.parametrize("model", ["llama-tiny", "gpt2-tiny"])
def test_eight_sequences_joining_at_different_steps(model, tmp_path):
    """8 prompts (1-200 tokens) generated together, each joining 3 steps after the previous one:
    their prefills share steps with the others' decode tokens, and every sequence attends to its
    own cache blocks. Each must give transformers' tokens (no true tie occurs on these prompts;
    a tie would show here as a mismatch at a step whose top-2 gap is under 1e-5)."""
    prompts = reference(model)["prompts"]
    chosen = [0, 3, 5, 8, 11, 14, 17, 19]
    lines = [json.dumps({"prompt_ids": prompts[i]["prompt_ids"], "start_step": 3 * k}) for k, i in enumerate(chosen)]
    (tmp_path / "batch.jsonl").write_text("\n".join(lines) + "\n")
    r = run_fusor("generate", MODELS / model, "--batch", tmp_path / "batch.jsonl", "--max-new-tokens", 64,
                  "--ignore-eos", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["sequences"]) == 8 and out["generated_tokens"] == 8 * 64
    assert out["steps"] < 8 * 64  # they really ran together
    for seq, i in zip(out["sequences"], chosen):
        case = prompts[i]
        assert seq["prompt_ids"] == case["prompt_ids"]
        mismatch = next((s for s, (a, b) in enumerate(zip(seq["output_ids"], case["output_ids"])) if a != b), None)
        assert mismatch is None or case["top2_gap"][mismatch] < TIE, (
            f"prompt {i}, step {mismatch}: {seq['output_ids'][mismatch]} vs {case['output_ids'][mismatch]}")


def test_kv_cache_holds_exactly_the_keys_and_values():
    """--stats: the pool's bytes per token are layers x 2 x KV heads x head size x 4."""
    config = json.loads((MODELS / "llama-tiny" / "config.json").read_text())
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    want = config["num_hidden_layers"] * 2 * config["num_key_value_heads"] * head_dim * 4
    for model in ("llama-tiny", "llama-tiny-merged"):
        out = greedy(model, [5, 6, 7], 20, "--stats")
        cache = out["kv_cache"]
        assert cache["bytes_per_token"] == want, cache
        assert cache["bytes"] == cache["blocks"] * cache["block_size"] * want
        assert cache["blocks_used"] == -(-(3 + 19) // cache["block_size"])  # the last token is never fed
        assert out["sessions_built"] <= 3  # one plan per token-count rung, not per past length
    unfused = greedy("llama-tiny", [5, 6, 7], 4, "--stats", "--no-fusion")
    assert unfused["kv_cache"] == {"refused": "fusion is off"}


def test_profile_times_the_kernels_of_decode_and_prompt_steps(tmp_path):
    """--profile: the --json object's "profile" counts one prompt step and a decode step per later
    token, each layer's cached attention once per step, and the table says the same on stderr; in a
    --batch, two sequences share their steps; the plain loop has no profile and says why."""
    layers = json.loads((MODELS / "llama-tiny" / "config.json").read_text())["num_hidden_layers"]
    out = greedy("llama-tiny", [5, 6, 7], 9, "--profile")
    decode, prompt = out["profile"]["decode"], out["profile"]["prompt"]
    assert (prompt["steps"], prompt["tokens"], decode["steps"], decode["tokens"]) == (1, 3, 8, 8)
    for kind in (decode, prompt):
        attention = [k for k in kind["kernels"] if k["op"] == "CachedAttention"]
        assert len(attention) == 1 and attention[0]["calls"] == layers * kind["steps"], kind["kernels"]
        assert 0 < sum(k["seconds"] for k in kind["kernels"]) <= kind["seconds"]

    r = run_fusor("generate", MODELS / "llama-tiny", "--prompt-ids", "5,6,7", "--max-new-tokens", 4, "--ignore-eos",
                  "--profile")
    assert r.returncode == 0, r.stderr
    assert "decode steps: 3 (3 tokens)" in r.stderr and "prompt steps: 1 (3 tokens)" in r.stderr, r.stderr
    assert "(CachedAttention)" in r.stderr

    (tmp_path / "batch.jsonl").write_text('{"prompt_ids": [5, 6, 7]}\n{"prompt_ids": [8, 9]}\n')
    r = run_fusor("generate", MODELS / "llama-tiny", "--batch", tmp_path / "batch.jsonl", "--max-new-tokens", 5,
                  "--ignore-eos", "--profile", "--json")
    assert r.returncode == 0, r.stderr
    profile = json.loads(r.stdout)["profile"]
    assert (profile["prompt"]["steps"], profile["prompt"]["tokens"]) == (1, 5)
    assert (profile["decode"]["steps"], profile["decode"]["tokens"]) == (4, 8)

    r = run_fusor("generate", MODELS / "llama-tiny", "--prompt-ids", "5,6,7", "--max-new-tokens", 2, "--profile",
                  "--no-fusion")
    assert r.returncode == 0, r.stderr
    assert "no profile: the plain loop ran (fusion is off)" in r.stderr and "steps:" not in r.stderr, r.stderr


@pytest.mark.parametrize("line,says", [
    ("not json", "not a JSON object"),
    ('{"prompt_ids": [1], "prompt": "x"}', "one of them"),
    ('{"prompt_ids": [1, -1]}', "non-negative integers"),
    ('{"prompt_ids": []}', "no tokens"),
    ('{"prompt_ids": [1], "start_step": -2}', "start_step"),
    ('{"prompt_ids": [1], "n": 2}', "unknown field 'n'"),
    ('{"prompt_ids": [99999]}', "outside the vocabulary"),
])
def test_bad_batch_lines_are_one_line_errors(tmp_path, line, says):
    (tmp_path / "batch.jsonl").write_text('{"prompt_ids": [1, 2]}\n' + line + "\n")
    r = run_fusor("generate", MODELS / "gpt2-tiny", "--batch", tmp_path / "batch.jsonl", "--max-new-tokens", 2)
    assert r.returncode != 0 and r.stdout == ""
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_merged_export_gives_llama_tiny_tokens():
    case = reference("llama-tiny")["prompts"][9]
    merged = reference("llama-tiny-merged")["prompts"][9]
    assert merged["prompt_ids"] == case["prompt_ids"]
    out = greedy("llama-tiny-merged", case["prompt_ids"], 12)
    assert out["output_ids"] == greedy("llama-tiny", case["prompt_ids"], 12)["output_ids"]
    assert out["output_ids"] == case["output_ids"][:12]


def hf_tokenizer(model):
    return Tokenizer.from_file(str(MODELS / model / "tokenizer.json"))


@pytest.mark.parametrize("model,index", [("llama-tiny", 14), ("gpt2-tiny", 18)])
def test_text_round_trip(model, index):
    """--prompt encodes as HF does, and the text is HF's decode of the new ids, streamed or not."""
    case = reference(model)["prompts"][index]
    assert case["source"] == "text"
    out = generate(model, "--prompt", case["text"], "--max-new-tokens", 10)
    assert out["prompt_ids"] == case["prompt_ids"]
    assert out["output_ids"] == case["output_ids"][:10]
    tok = hf_tokenizer(model)
    assert out["text"] == tok.decode(out["output_ids"], skip_special_tokens=True)
    plain = run_fusor("generate", MODELS / model, "--prompt", case["text"], "--max-new-tokens", 10)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == out["text"] + "\n"


def test_zero_new_tokens():
    out = greedy("gpt2-tiny", [5, 6, 7], 0)
    assert out["output_ids"] == [] and out["text"] == "" and out["finish_reason"] == "length"


def first_new_token_step(ids, at_least):
    """A step k >= at_least whose token did not come earlier: EOS there stops exactly there."""
    return next(k for k in range(at_least, len(ids)) if ids[k] not in ids[:k])


def test_eos_id_stops_generation():
    case = reference("gpt2-tiny")["prompts"][7]
    k = first_new_token_step(case["output_ids"], 5)
    eos = case["output_ids"][k]
    out = generate("gpt2-tiny", "--prompt-ids", ids_arg(case["prompt_ids"]), "--max-new-tokens", 64, "--eos-id", eos)
    assert out["output_ids"] == case["output_ids"][:k + 1] and out["finish_reason"] == "stop"
    # --ignore-eos goes on past it
    out = greedy("gpt2-tiny", case["prompt_ids"], k + 3, "--eos-id", eos)
    assert out["output_ids"] == case["output_ids"][:k + 3] and out["finish_reason"] == "length"


def test_eos_ids_from_generation_config(tmp_path):
    """A list of EOS ids in generation_config.json beside the model is what stops it."""
    case = reference("gpt2-tiny")["prompts"][3]
    k = first_new_token_step(case["output_ids"], 4)
    for f in ("model.onnx", "config.json", "tokenizer.json"):
        (tmp_path / f).symlink_to(MODELS / "gpt2-tiny" / f)
    (tmp_path / "generation_config.json").write_text(json.dumps({"eos_token_id": [2, case["output_ids"][k]]}))
    r = run_fusor("generate", tmp_path, "--prompt-ids", ids_arg(case["prompt_ids"]), "--max-new-tokens", 64, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["output_ids"] == case["output_ids"][:k + 1] and out["finish_reason"] == "stop"


def test_stop_string_cuts_the_text():
    case = reference("gpt2-tiny")["prompts"][12]
    full = generate("gpt2-tiny", "--prompt", case["text"], "--max-new-tokens", 14, "--ignore-eos")
    text = full["text"]
    # A stop string that starts after the first token's text and spans a few characters.
    start = len(hf_tokenizer("gpt2-tiny").decode(full["output_ids"][:2], skip_special_tokens=True))
    stop = text[start:start + 4]
    assert len(stop) == 4, text
    cut = text.find(stop)
    out = generate("gpt2-tiny", "--prompt", case["text"], "--max-new-tokens", 14, "--stop", "never-there", "--stop", stop)
    assert out["finish_reason"] == "stop" and out["text"] == text[:cut]
    assert out["output_ids"] == full["output_ids"][:len(out["output_ids"])]
    # the token that completed the stop string is the last one
    decoded = hf_tokenizer("gpt2-tiny").decode(out["output_ids"], skip_special_tokens=True)
    assert stop in decoded and stop not in hf_tokenizer("gpt2-tiny").decode(out["output_ids"][:-1])
    plain = run_fusor("generate", MODELS / "gpt2-tiny", "--prompt", case["text"], "--max-new-tokens", 14, "--stop", stop)
    assert plain.returncode == 0 and plain.stdout == text[:cut] + "\n"


SAMPLING = ("--temperature", 0.9, "--top-k", 40, "--top-p", 0.95)


def test_sampling_is_reproducible_per_seed():
    prompt = reference("gpt2-tiny")["prompts"][5]["prompt_ids"]
    a = generate("gpt2-tiny", "--prompt-ids", ids_arg(prompt), "--max-new-tokens", 16, "--ignore-eos", *SAMPLING, "--seed", 7)
    b = generate("gpt2-tiny", "--prompt-ids", ids_arg(prompt), "--max-new-tokens", 16, "--ignore-eos", *SAMPLING, "--seed", 7)
    c = generate("gpt2-tiny", "--prompt-ids", ids_arg(prompt), "--max-new-tokens", 16, "--ignore-eos", *SAMPLING, "--seed", 8)
    assert a["output_ids"] == b["output_ids"] and a["text"] == b["text"]
    assert a["output_ids"] != c["output_ids"]
    assert a["output_ids"] != greedy("gpt2-tiny", prompt, 16)["output_ids"]


def test_sampling_that_keeps_one_token_is_greedy():
    case = reference("gpt2-tiny")["prompts"][5]
    for keep_one in (("--top-k", 1), ("--top-p", 1e-6)):
        out = greedy("gpt2-tiny", case["prompt_ids"], 10, "--temperature", 1.5, "--seed", 3, *keep_one)
        assert out["output_ids"] == case["output_ids"][:10]


def ort_greedy_with_repetition_penalty(model, prompt, n, penalty):
    """ONNX Runtime in a KV-cache loop, transformers' RepetitionPenaltyLogitsProcessor, argmax."""
    import onnxruntime as ort
    import torch
    from transformers import RepetitionPenaltyLogitsProcessor

    cfg = json.loads((MODELS / model / "config.json").read_text())
    heads = cfg.get("num_key_value_heads", cfg.get("n_head"))
    layers = cfg.get("num_hidden_layers", cfg.get("n_layer"))
    head_dim = cfg.get("hidden_size", cfg.get("n_embd")) // cfg.get("num_attention_heads", cfg.get("n_head"))
    sess = ort.InferenceSession(str(model_path(model)), providers=["CPUExecutionProvider"])
    processor = RepetitionPenaltyLogitsProcessor(penalty)
    past = {f"past_key_values.{i}.{kv}": np.zeros((1, heads, 0, head_dim), np.float32)
            for i in range(layers) for kv in ("key", "value")}
    ids, new = list(prompt), list(prompt)
    for _ in range(n):
        p = len(ids) - len(new)
        feeds = {"input_ids": np.array([new], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64),
                 "position_ids": np.arange(p, len(ids), dtype=np.int64)[None], **past}
        outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
        scores = processor(torch.tensor([ids]), torch.from_numpy(outs["logits"][:, -1].copy()))
        token = int(scores.argmax(-1))
        past = {k: outs[k.replace("past_key_values", "present")] for k in past}
        ids.append(token)
        new = [token]
    return ids[len(prompt):]


def test_repetition_penalty_matches_transformers():
    prompt = reference("gpt2-tiny")["prompts"][9]["prompt_ids"]
    out = greedy("gpt2-tiny", prompt, 12, "--repetition-penalty", 1.3)
    assert out["output_ids"] == ort_greedy_with_repetition_penalty("gpt2-tiny", prompt, 12, 1.3)
    assert out["output_ids"] != reference("gpt2-tiny")["prompts"][9]["output_ids"][:12]


def test_sampling_defaults_come_from_generation_config(tmp_path):
    """generation_config.json's sampling keys fill the knobs the flags leave out, as transformers'
    generate() reads them: greedy (with its repetition penalty) unless it says do_sample, and a
    flag wins over each key."""
    prompt = reference("gpt2-tiny")["prompts"][9]["prompt_ids"]
    for f in ("model.onnx", "config.json", "tokenizer.json"):
        (tmp_path / f).symlink_to(MODELS / "gpt2-tiny" / f)
    config = tmp_path / "generation_config.json"
    config.write_text(json.dumps({"repetition_penalty": 1.3, "temperature": 0.9}))  # no do_sample: greedy
    plain = greedy("gpt2-tiny", prompt, 16)["output_ids"]
    assert greedy(tmp_path, prompt, 12)["output_ids"] == greedy("gpt2-tiny", prompt, 12, "--repetition-penalty", 1.3)["output_ids"]
    assert greedy(tmp_path, prompt, 12, "--repetition-penalty", 1)["output_ids"] == plain[:12]
    config.write_text(json.dumps({"do_sample": True, "temperature": 0.9, "top_k": 40, "top_p": 0.95}))
    sampled = greedy(tmp_path, prompt, 16, "--seed", 7)["output_ids"]
    assert sampled == greedy("gpt2-tiny", prompt, 16, *SAMPLING, "--seed", 7)["output_ids"] and sampled != plain
    assert greedy(tmp_path, prompt, 16, "--seed", 7, "--temperature", 0)["output_ids"] == plain
    config.write_text(json.dumps({"do_sample": True, "top_p": 2}))
    r = run_fusor("generate", tmp_path, "--prompt-ids", ids_arg(prompt), "--max-new-tokens", 2)
    assert r.returncode != 0 and r.stdout == ""
    assert "generation_config.json: top_p must be a number in (0, 1]" in r.stderr and r.stderr.count("\n") == 1


def test_prompt_beyond_the_context_length_is_an_error():
    r = run_fusor("generate", MODELS / "gpt2-tiny", "--prompt-ids", ids_arg([5] * 513), "--max-new-tokens", 1)
    assert r.returncode != 0 and r.stdout == ""
    assert "context length of 512" in r.stderr and r.stderr.count("\n") == 1


def test_the_context_holds_the_prompt_and_every_new_token(tmp_path):
    """As vLLM counts: prompt + generated <= the context (llama-tiny's 512). 511 tokens leave room
    for one more; a prompt of 512 (which got one token, 513 in all) or 600 leaves none."""
    out = greedy("llama-tiny", [5] * 511, 4)
    assert len(out["output_ids"]) == 1 and out["finish_reason"] == "length"
    for n in (512, 600):
        r = run_fusor("generate", MODELS / "llama-tiny", "--prompt-ids", ids_arg([5] * n), "--max-new-tokens", 4)
        assert r.returncode != 0 and r.stdout == ""
        assert f"prompt has {n} tokens" in r.stderr and "context length of 512" in r.stderr, r.stderr
        assert r.stderr.count("\n") == 1, r.stderr
    # --batch runs the same rule over a DecoderBatch.
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"prompt_ids": [5] * 511}) + "\n")
    out = generate("llama-tiny", "--batch", batch, "--max-new-tokens", 4, "--ignore-eos")
    assert [(len(s["output_ids"]), s["finish_reason"]) for s in out["sequences"]] == [(1, "length")]
    batch.write_text(json.dumps({"prompt_ids": [5] * 511}) + "\n" + json.dumps({"prompt_ids": [5] * 512}) + "\n")
    r = run_fusor("generate", MODELS / "llama-tiny", "--batch", batch, "--max-new-tokens", 4)
    assert r.returncode != 0 and r.stdout == "" and "prompt has 512 tokens" in r.stderr, r.stderr


def test_generation_stops_when_the_context_is_full():
    out = greedy("gpt2-tiny", [5] * 510, 8)
    assert len(out["output_ids"]) == 2 and out["finish_reason"] == "length"
    # "As many as fit": room was reserved for every one of them (vector::reserve threw).
    out = greedy("gpt2-tiny", [5] * 510, 2**62)
    assert len(out["output_ids"]) == 2 and out["finish_reason"] == "length"


@pytest.mark.parametrize("args,says", [
    (["--prompt", "hi", "--prompt-ids", "1,2"], "one of them"),
    (["--max-new-tokens", "4"], "one of them"),
    (["--prompt-ids", "1,x"], "token ids"),
    (["--prompt-ids", "1,-2"], "token ids"),
    (["--prompt-ids", "1,99999"], "outside the vocabulary"),
    (["--prompt-ids", "1", "--max-new-tokens", "-1"], "--max-new-tokens"),
    (["--prompt-ids", "1", "--temperature", "-1"], "temperature"),
    (["--prompt-ids", "1", "--top-p", "1.5"], "top-p"),
    (["--prompt-ids", "1", "--top-k", "-3"], "top-k"),
    (["--prompt-ids", "1", "--repetition-penalty", "0"], "repetition penalty"),
    (["--prompt-ids", "1", "--eos-id", "two"], "--eos-id"),
    (["--prompt-ids", "1", "--stop", ""], "stop string"),
    (["--prompt", "hi", "--tokenizer", "/nonexistent/tokenizer.json"], "cannot read"),
])
def test_bad_flags_are_one_line_errors(args, says):
    if "--max-new-tokens" not in args:
        args = args + ["--max-new-tokens", "4"]
    r = run_fusor("generate", MODELS / "gpt2-tiny", *args)
    assert r.returncode != 0 and r.stdout == ""
    assert says in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_unreadable_files_are_one_line_errors(tmp_path):
    r = run_fusor("generate", tmp_path / "missing", "--prompt-ids", "1", "--max-new-tokens", 1)
    assert r.returncode != 0 and "cannot read" in r.stderr and r.stderr.count("\n") == 1
    (tmp_path / "model.onnx").symlink_to(model_path("gpt2-tiny"))
    r = run_fusor("generate", tmp_path, "--prompt", "hello", "--max-new-tokens", 1)
    assert r.returncode != 0 and "tokenizer" in r.stderr and r.stderr.count("\n") == 1
    (tmp_path / "generation_config.json").write_text("{not json")
    r = run_fusor("generate", tmp_path, "--prompt-ids", "1", "--max-new-tokens", 1)
    assert r.returncode != 0 and "generation_config.json" in r.stderr and r.stderr.count("\n") == 1


def test_genai_config_names_are_used(tmp_path):
    """genai_config.json's name templates replace the Optimum names: wrong ones fail naming them."""
    for f in ("model.onnx", "config.json", "tokenizer.json", "generation_config.json"):
        (tmp_path / f).symlink_to(MODELS / "llama-tiny" / f)
    genai = json.loads((MODELS / "llama-tiny" / "genai_config.json").read_text())
    genai["model"]["decoder"]["outputs"]["present_key_names"] = "cache.%d.k"
    (tmp_path / "genai_config.json").write_text(json.dumps(genai))
    r = run_fusor("generate", tmp_path, "--prompt-ids", "1,2", "--max-new-tokens", 1)
    assert r.returncode != 0 and "no output 'cache.0.k'" in r.stderr
    genai["model"]["decoder"]["outputs"]["present_key_names"] = "present.%d.key"
    genai["model"]["context_length"] = 8
    (tmp_path / "genai_config.json").write_text(json.dumps(genai))
    r = run_fusor("generate", tmp_path, "--prompt-ids", ids_arg(range(3, 12)), "--max-new-tokens", 1)
    assert r.returncode != 0 and "context length of 8" in r.stderr
    # The decoder's file stays inside the folder, as external data does: a folder's config
    # loaded any .onnx file on the machine.
    for outside in (str(MODELS / "gpt2-tiny" / "model.onnx"), "../elsewhere/model.onnx"):
        genai["model"]["decoder"]["filename"] = outside
        (tmp_path / "genai_config.json").write_text(json.dumps(genai))
        r = run_fusor("generate", tmp_path, "--prompt-ids", "1,2", "--max-new-tokens", 1)
        assert r.returncode != 0 and "is outside the model folder" in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_an_id_past_the_tokenizers_vocabulary_adds_no_text(tmp_path):
    """Logits wider than the tokenizer (Phi-3: 32064 for 32011 ids; Qwen2 pads too): a generated id
    the tokenizer lacks ended the generation with "token id 7893 is not in the vocabulary"."""
    full = json.loads((MODELS / "gpt2-tiny" / "tokenizer.json").read_text())
    kept = {tok: i for tok, i in full["model"]["vocab"].items() if i < 7800}
    full["model"]["vocab"] = kept
    full["model"]["merges"] = [m for m in full["model"]["merges"]
                               if "".join(m.split(" ") if isinstance(m, str) else m) in kept]
    trimmed = tmp_path / "tokenizer.json"
    trimmed.write_text(json.dumps(full))
    args = ["--prompt-ids", "1760", "--max-new-tokens", "3"]
    whole = generate("gpt2-tiny", *args)
    assert max(whole["output_ids"]) >= 7800, whole  # the case: an id the trimmed tokenizer lacks
    r = run_fusor("generate", MODELS / "gpt2-tiny", "--tokenizer", trimmed, *args, "--json")
    assert r.returncode == 0, r.stderr
    short = json.loads(r.stdout)
    assert short["output_ids"] == whole["output_ids"]
    want = Tokenizer.from_file(str(trimmed)).decode([i for i in whole["output_ids"] if i < 7800])
    assert short["text"] == want


@pytest.mark.parametrize("seed", ["-1", "18446744073709551616", "1e3"])
def test_a_seed_outside_uint64_is_a_usage_error(seed):
    """CLI11 read -1 and 2^64 as 2^64 - 1: two other seeds ran that one's stream."""
    r = run_fusor("generate", MODELS / "llama-tiny", "--prompt-ids", "5", "--max-new-tokens", "1", "--temperature", "1",
                  "--seed", seed)
    assert r.returncode == 2 and "--seed: must be an integer in [0, 2^64)" in r.stderr, r.stderr


def test_a_batch_of_token_ids_needs_no_tokenizer(tmp_path):
    """As --prompt-ids alone: --batch required a tokenizer.json even when every line gave ids."""
    folder = tmp_path / "no-tokenizer"
    folder.mkdir()
    for name in ("model.onnx", "config.json", "generation_config.json"):
        (folder / name).symlink_to(MODELS / "llama-tiny" / name)
    lines = tmp_path / "batch.jsonl"
    lines.write_text('{"prompt_ids": [1, 450, 4996]}\n{"prompt": "text"}\n')
    r = run_fusor("generate", folder, "--batch", lines, "--max-new-tokens", 4, "--ignore-eos", "--json")
    assert r.returncode == 1 and "--batch line 2: a text prompt needs a tokenizer" in r.stderr, r.stderr
    lines.write_text('{"prompt_ids": [1, 450, 4996]}\n')
    r = run_fusor("generate", folder, "--batch", lines, "--max-new-tokens", 4, "--ignore-eos", "--json")
    assert r.returncode == 0, r.stderr
    alone = generate("llama-tiny", "--prompt-ids", "1,450,4996", "--max-new-tokens", 4, "--ignore-eos")
    assert json.loads(r.stdout)["sequences"][0]["output_ids"] == alone["output_ids"]


def test_a_sliding_window_gives_transformers_tokens(tmp_path):
    """A mask that hides keys more than a window behind (Mistral's and Gemma's sliding window;
    here 8 positions, baked into a small Llama's causal_mask) shows only far into the context,
    past where the paged cache's short probes look: a far probe finds it, and the paged kernel
    attends to each token's last 8 positions, alone and with other sequences in its steps."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    import sys
    sys.path.insert(0, str(ROOT / "scripts"))
    import decoder_export
    transformers.logging.set_verbosity_error()
    cfg = transformers.LlamaConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                   intermediate_size=128, vocab_size=256, max_position_embeddings=64,
                                   attn_implementation="eager")
    torch.manual_seed(0)
    lm = transformers.LlamaForCausalLM(cfg).eval()
    with torch.no_grad():
        for p in lm.parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.2)  # decisive logits: no near-ties between the two best tokens
    n = lm.model.causal_mask.shape[-1]
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    lm.model.register_buffer("causal_mask", ((j > i) | (j <= i - 8)).to(lm.model.causal_mask.dtype), persistent=False)
    os.replace(decoder_export.export_decoder(lm, tmp_path / "model.onnx", "windowed"), tmp_path / "model.onnx")
    cfg.save_pretrained(tmp_path)
    prompt = list(range(3, 30))
    with torch.no_grad():
        expected = lm.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False, pad_token_id=0)[0, len(prompt):]
    r = run_fusor("generate", tmp_path, "--prompt-ids", ids_arg(prompt), "--max-new-tokens", 8, "--ignore-eos", "--json",
                  "--stats")
    assert r.returncode == 0, r.stderr
    assert "paged KV cache" in r.stderr, r.stderr
    assert json.loads(r.stdout)["output_ids"] == expected.tolist()
    batch = tmp_path / "batch.jsonl"
    batch.write_text(json.dumps({"prompt_ids": prompt}) + "\n" + json.dumps({"prompt_ids": prompt[:5], "start_step": 3}) + "\n")
    r = run_fusor("generate", tmp_path, "--batch", batch, "--max-new-tokens", 8, "--ignore-eos", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["sequences"][0]["output_ids"] == expected.tolist()
