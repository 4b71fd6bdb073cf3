"""Greedy references for the decoders' parity tests (issue #16): transformers' generate() on the
torch model that was exported, saved as models/NAME/greedy_reference.json, after checking that
ONNX Runtime running the export in a KV-cache loop picks the same tokens (on ORT_CHECKED).

File format:
  {"generator": "...how the outputs were made...", "max_new_tokens": 64, "eos_token_id": 2,
   "eos_ignored": true, "context_length": 512, "vocab_size": 8192,
   "true_tie_threshold": 1e-5, "steps_with_true_tie": n, "min_top2_gap": x,
   "prompts": [{"source": "text" | "random", "text": str (text prompts only),
                "prompt_ids": [...], "output_ids": [64 new ids],
                "top2_gap": [64 floats: top-1 minus top-2 logit at each step],
                "eos_hit": bool (EOS among output_ids; generation went on regardless)}]}
A test may accept either token where top2_gap < true_tie_threshold and then continue
teacher-forced with the reference's token.
"""
import json
from pathlib import Path

import decoder_tokenizer
from decoder_export import USE_CACHE_BRANCH, decoder_dims
from model_tools import log

MAX_NEW_TOKENS = 64
TIE = 1e-5
# Prompt lengths in tokens, 1..200; even indexes come from text, odd ones are random ids.
LENGTHS = [1, 2, 3, 4, 5, 7, 9, 12, 15, 19, 24, 31, 39, 50, 63, 80, 101, 128, 160, 200]
# Prompts that ONNX Runtime replays (random and text, short and long): a decode step of a 20 M
# model reads all its weights, ~15 ms on a busy 2-core machine, so all 20 would add ~20 s.
ORT_CHECKED = (5, 12, 18, 19)


def _text_prompt(tok, text, n, offset):
    """The longest piece of text from code point `offset` whose encoding is at most n tokens
    (cut at code points, so it is valid text)."""
    piece = ""
    for end in range(offset + 1, len(text) + 1):
        if len(tok.encode(text[offset:end]).ids) > n:
            break
        piece = text[offset:end]
    return piece


def prompts(tok, text, vocab, special):
    """20 prompts: text pieces (varied languages, code, emoji) and uniform random ids above the
    special ids, from one seeded generator."""
    import numpy as np
    rng = np.random.Generator(np.random.PCG64(16))
    out = []
    for i, n in enumerate(LENGTHS):
        if i % 2 == 0:
            offset = int(rng.integers(0, len(text) // 2))
            piece = _text_prompt(tok, text, n, offset)
            out.append({"source": "text", "text": piece, "prompt_ids": tok.encode(piece).ids})
        else:
            ids = rng.integers(special, vocab, n).tolist()
            out.append({"source": "random", "prompt_ids": ids})
    return out


def _torch_greedy(lm, ids):
    import torch
    x = torch.tensor([ids], dtype=torch.int64)
    with torch.no_grad():
        g = lm.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False,
                        num_beams=1, max_new_tokens=MAX_NEW_TOKENS, min_new_tokens=0,
                        eos_token_id=None, use_cache=True, output_logits=True,
                        return_dict_in_generate=True)
    new = g.sequences[0, len(ids):].tolist()
    if len(new) != MAX_NEW_TOKENS:
        raise SystemExit(f"get-models: generate() made {len(new)} tokens, not {MAX_NEW_TOKENS}")
    gaps = []
    for step, logits in enumerate(g.logits):
        top = torch.topk(logits[0], 2)
        if int(top.indices[0]) != new[step] and float(top.values[0] - top.values[1]) > 0:
            raise SystemExit("get-models: generate()'s token is not the argmax of its logits")
        gaps.append(float(top.values[0] - top.values[1]))
    return new, gaps


def _ort_greedy(session, ids, want, gaps, dims):
    """ORT's greedy tokens in a KV-cache loop (prompt, then one token a step; a merged export
    takes the no-past branch for the prompt). Where ORT picks
    another token than torch, the step must be a near tie (gap < 1e-4): then it continues
    with torch's token. Returns the number of such steps."""
    import numpy as np
    layers, kv_heads, head_dim, _ = dims
    past = {f"past_key_values.{i}.{t}": np.zeros((1, kv_heads, 0, head_dim), np.float32)
            for i in range(layers) for t in ("key", "value")}
    merged = any(i.name == USE_CACHE_BRANCH for i in session.get_inputs())
    x, pos, flips = list(ids), 0, 0
    for step in range(MAX_NEW_TOKENS):
        f = {"input_ids": np.array([x], np.int64),
             "attention_mask": np.ones((1, pos + len(x)), np.int64),
             "position_ids": np.arange(pos, pos + len(x), dtype=np.int64)[None], **past}
        if merged:  # the no-past branch for the prompt, the past branch after it
            f[USE_CACHE_BRANCH] = np.array([pos > 0])
        out = session.run(None, f)
        pos += len(x)
        got = int(np.argmax(out[0][0, -1]))
        if got != want[step]:
            if gaps[step] >= 1e-4:
                raise SystemExit(f"get-models: ONNX Runtime's greedy token {got} differs from "
                                 f"generate()'s {want[step]} at step {step} (gap {gaps[step]:.2e})")
            flips += 1
        past = {n: t for n, t in zip(past, out[1:])}
        x = [want[step]]
    return flips


def generate(lm, tok, text):
    """The 20 prompts with generate()'s output ids, top-2 gaps and EOS flags (the slow part:
    1280 decode steps in torch)."""
    ps = prompts(tok, text, decoder_dims(lm.config)[3], len(decoder_tokenizer.SPECIAL_TOKENS))
    for p in ps:
        p["output_ids"], p["top2_gap"] = _torch_greedy(lm, p["prompt_ids"])
        p["eos_hit"] = lm.config.eos_token_id in p["output_ids"]
    return ps


def write(ps, cfg, onnx_path, out_dir: Path, context_length):
    """generate()'s references ps into out_dir/greedy_reference.json (via a temporary file,
    returned), after ORT on onnx_path (the export of the same weights, possibly not yet renamed
    into place) reproduces those of ORT_CHECKED in a KV-cache loop."""
    import onnxruntime as ort
    import transformers
    dims = decoder_dims(cfg)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 2
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")  # 2 shared cores
    session = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
    flips = sum(_ort_greedy(session, ps[i]["prompt_ids"], ps[i]["output_ids"],
                            ps[i]["top2_gap"], dims) for i in ORT_CHECKED)
    gaps = [g for p in ps for g in p["top2_gap"]]
    ties = sum(g < TIE for g in gaps)
    doc = {"generator": f"transformers {transformers.__version__} generate(): greedy "
                        f"(do_sample False, num_beams 1), use_cache True, batch 1, attention_mask "
                        f"all ones, eos_token_id None so EOS is ignored and every prompt gets "
                        f"exactly max_new_tokens new tokens",
           "max_new_tokens": MAX_NEW_TOKENS, "eos_token_id": cfg.eos_token_id,
           "eos_ignored": True, "context_length": context_length, "vocab_size": dims[3],
           "true_tie_threshold": TIE, "steps_with_true_tie": ties, "min_top2_gap": min(gaps),
           "prompts": ps}
    path = out_dir / "greedy_reference.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    log(f"  greedy references: {len(ps)} prompts of {min(LENGTHS)}-{max(LENGTHS)} tokens, "
        f"min top-2 gap {min(gaps):.2e}, {ties} steps under {TIE:g}, "
        f"{sum(g < 1e-3 for g in gaps)} under 1e-3, {sum(p['eos_hit'] for p in ps)} prompts "
        f"hit EOS; ORT's KV loop agrees on prompts {list(ORT_CHECKED)} ({flips} near-tie flips)")
    return tmp
