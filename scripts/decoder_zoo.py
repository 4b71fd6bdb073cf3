"""Makers of the random-weight decoders (issue #16): llama-tiny, gpt2-tiny, and llama-tiny-merged
(llama-tiny's weights as Optimum's merged decoder, an If on use_cache_branch). Each folder holds
model.onnx (the layout of scripts/decoder_export.py), config.json, generation_config.json
(BOS/EOS/pad ids of the tokenizer), the tokenizer of scripts/decoder_tokenizer.py
(tokenizer.json, tokenizer_config.json, special_tokens_map.json) and greedy_reference.json
(scripts/greedy_reference.py); llama-tiny also has ONNX Runtime GenAI's genai_config.json.

Each maker returns at once when its folder is complete; otherwise it writes every file, the
export last: the model through a checked temporary file renamed into place, so a folder with
model.onnx is complete.
"""
import json
import os

import decoder_export
import decoder_tokenizer as tokenizer
import greedy_reference
from model_tools import MODELS, ROOT, cached, finish, log

CONTEXT = 512  # positions: prompts of up to 200 tokens plus 64 new ones fit with room to spare
SPECIAL_IDS = dict(bos_token_id=tokenizer.BOS_ID, eos_token_id=tokenizer.EOS_ID,
                   pad_token_id=tokenizer.PAD_ID)
# About 19.5 M parameters (11.0 M in the layers, 4.2 M each in the untied embedding and head).
LLAMA = dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2,
             intermediate_size=1376, vocab_size=tokenizer.VOCAB_SIZE,
             max_position_embeddings=CONTEXT, **SPECIAL_IDS)
# About 23.4 M parameters (18.9 M in the layers, 4.2 M in the embedding tied to the head).
GPT2 = dict(n_embd=512, n_layer=6, n_head=8, n_inner=2048, vocab_size=tokenizer.VOCAB_SIZE,
            n_positions=CONTEXT, **SPECIAL_IDS)
_REFERENCES = {}  # kind -> greedy_reference.generate()'s prompts, made once a run
FILES = ["config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
         "special_tokens_map.json", "greedy_reference.json", "model.onnx"]


def _model(kind):
    import torch
    import transformers
    transformers.logging.set_verbosity_error()
    torch.manual_seed(0)
    if kind == "llama":
        cfg = transformers.LlamaConfig(**LLAMA, attn_implementation="eager")
        return transformers.LlamaForCausalLM(cfg).eval()
    return transformers.GPT2LMHeadModel(transformers.GPT2Config(**GPT2)).eval()


def genai_config(cfg):
    """ONNX Runtime GenAI's genai_config.json for a Llama config: the decoder's input and output
    name templates (%d = layer), its dims, special ids and greedy search defaults."""
    layers, kv_heads, head_dim, vocab = decoder_export.decoder_dims(cfg)
    return {
        "model": {
            "bos_token_id": cfg.bos_token_id, "eos_token_id": cfg.eos_token_id,
            "pad_token_id": cfg.pad_token_id, "context_length": cfg.max_position_embeddings,
            "type": "llama", "vocab_size": vocab,
            "decoder": {
                "filename": "model.onnx", "head_size": head_dim, "hidden_size": cfg.hidden_size,
                "num_attention_heads": cfg.num_attention_heads, "num_hidden_layers": layers,
                "num_key_value_heads": kv_heads,
                "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                           "position_ids": "position_ids",
                           "past_key_names": "past_key_values.%d.key",
                           "past_value_names": "past_key_values.%d.value"},
                "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                            "present_value_names": "present.%d.value"}}},
        "search": {"do_sample": False, "num_beams": 1, "num_return_sequences": 1,
                   "max_length": cfg.max_position_embeddings, "min_length": 0,
                   "temperature": 1.0, "top_k": 1, "top_p": 1.0, "repetition_penalty": 1.0,
                   "length_penalty": 1.0, "diversity_penalty": 0.0, "no_repeat_ngram_size": 0,
                   "early_stopping": True, "past_present_share_buffer": False}}


def _make(name, kind, force, merged=False):
    out_dir = MODELS / name
    path = out_dir / "model.onnx"
    files = FILES + (["genai_config.json"] if name == "llama-tiny" else [])
    if not force and cached(out_dir, files):
        log(f"{path.relative_to(ROOT)}: cached")
        return
    from transformers import GenerationConfig
    log(f"exporting {path.relative_to(ROOT)} (random init, seed 0, opset {decoder_export.OPSET}"
        f"{', merged' if merged else ''})")
    lm = _model(kind)
    log(f"  {sum(p.numel() for p in lm.parameters()) / 1e6:.1f} M parameters")
    # A stale model.onnx would make the folder look complete while the other files change.
    if path.exists():
        path.unlink()
    export = decoder_export.export_merged if merged else decoder_export.export_decoder
    tmp = export(lm, path, name)
    lm.config.save_pretrained(out_dir)
    GenerationConfig.from_model_config(lm.config).save_pretrained(out_dir)
    tokenizer.save(out_dir, CONTEXT)
    if name == "llama-tiny":
        (out_dir / "genai_config.json").write_text(
            json.dumps(genai_config(lm.config), indent=4) + "\n")
    if kind not in _REFERENCES:  # llama-tiny-merged reuses llama-tiny's (the same weights)
        _REFERENCES[kind] = greedy_reference.generate(
            lm, tokenizer.train(), tokenizer.SAMPLE.read_text(encoding="utf-8"))
    ref = greedy_reference.write(_REFERENCES[kind], lm.config, tmp, out_dir, CONTEXT)
    os.replace(ref, out_dir / "greedy_reference.json")
    finish(tmp, path)


def get_llama_tiny(force):
    _make("llama-tiny", "llama", force)


def get_gpt2_tiny(force):
    _make("gpt2-tiny", "gpt2", force)


def get_llama_tiny_merged(force):
    _make("llama-tiny-merged", "llama", force, merged=True)


MAKERS = {"llama-tiny": get_llama_tiny, "gpt2-tiny": get_gpt2_tiny,
          "llama-tiny-merged": get_llama_tiny_merged}
