"""A decoder written with ONNX's own ops of opsets 23 and 24, as torch's dynamo exporter and ONNX
Runtime GenAI write them: RMSNormalization, RotaryEmbedding, Attention with its KV cache inside
(grouped-query heads, a causal and a boolean padding mask) and Swish. fusor imports them by
expanding them into older ops; the decoder must generate ONNX Runtime's greedy tokens on the
paged KV cache (the expanded attention rewritten to cached attention, the batch size read off a
past tensor or the mask as the dynamo exporter reads it), alone and in a batch; and so must the
same decoder without a position_ids input, whose positions count from the past's length, and in
float16 (computed in float32, with the paged pool in float32)."""
import collections
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h, numpy_helper

from decoder_checks import generate_batch, generate_on_paged_cache, ort_greedy

VOCAB, HIDDEN, HEADS, KV_HEADS, HEAD, LAYERS, FFN, CONTEXT = 97, 32, 4, 2, 8, 2, 48, 64


def decoder_graph(position_input=True, kv_heads=KV_HEADS, dtype=np.float32, softcap=0.0):
    """position_input False: no position_ids input; positions count from the past's length, and
    the batch size comes off the mask, as transformers 5's dynamo export without position_ids.
    kv_heads 1: multi-query attention, whose one KV head the attention's MatMuls broadcast.
    dtype float16: weights, cache and logits in float16 (the paged pool keeps float32 copies).
    softcap: Gemma 2's cap * tanh(score / cap) on the attention scores."""
    elem = T.FLOAT16 if dtype == np.float16 else T.FLOAT
    rng = np.random.default_rng(23)
    inits, nodes = [], []

    def weight(name, *shape, scale=0.3):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(dtype), name))
        return name

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(op, ins, out, **attrs):
        nodes.append(h.make_node(op, ins, [out], **attrs))
        return out

    angles = np.outer(np.arange(CONTEXT), 1.0 / 10000 ** (np.arange(0, HEAD, 2) / HEAD))
    const("cos", np.cos(angles).astype(dtype))
    const("sin", np.sin(angles).astype(dtype))
    const("split_shape", np.array([0, 0, -1, HEAD], np.int64))
    const("mask_axes", np.array([1, 2], np.int64))
    # [B,1,S,T]: ONNX Runtime wants the mask's query axis as long as the query
    mask = node("Unsqueeze", [node("Cast", ["attention_mask"], "mask_bool", to=T.BOOL), "mask_axes"], "mask4d")
    nodes.append(h.make_node("Shape", ["input_ids"], ["seq"], start=1, end=2))
    rows = node("Concat", [const("ones2", np.array([1, 1], np.int64)), "seq", const("one", np.array([1], np.int64))],
                "mask_rows", axis=0)
    mask = node("Expand", [mask, rows], "mask_expanded")
    # torch's dynamo exporter reads the batch size off a past tensor, or the mask
    batch_from = f"past_key_values.{LAYERS - 1}.value" if position_input else "attention_mask"
    nodes.append(h.make_node("Shape", [batch_from], ["batch"], start=0, end=1))
    positions = "position_ids"
    if not position_input:
        nodes += [h.make_node("Shape", ["past_key_values.0.key"], ["past_len1"], start=2, end=3),
                  h.make_node("Squeeze", ["past_len1"], ["past_len"]),
                  h.make_node("Squeeze", ["seq"], ["seq_len"]),
                  h.make_node("Add", ["past_len", "seq_len"], ["end_pos"]),
                  h.make_node("Range", ["past_len", "end_pos", const("step", np.array(1, np.int64))], ["cache_position"]),
                  h.make_node("Unsqueeze", ["cache_position", const("axis0", np.array([0], np.int64))], ["positions"])]
        positions = "positions"
    merge_shape = node("Concat", ["batch", "seq", const("width", np.array([HEADS * HEAD], np.int64))], "merge_shape", axis=0)
    x = node("Gather", [weight("embed", VOCAB, HIDDEN), "input_ids"], "x0")
    for layer in range(LAYERS):
        p = f"l{layer}."
        normed = node("RMSNormalization", [x, const(p + "ln1", np.ones(HIDDEN, dtype))], p + "n1", epsilon=1e-6)

        def heads(proj, width, rotary):
            y = node("MatMul", [normed, weight(p + proj, HIDDEN, width)], p + proj + "_y")
            y = node("Transpose", [node("Reshape", [y, "split_shape"], p + proj + "_r")], p + proj + "_t", perm=[0, 2, 1, 3])
            return node("RotaryEmbedding", [y, "cos", "sin", positions], p + proj + "_rot") if rotary else y

        q, k, v = heads("q", HEADS * HEAD, True), heads("k", kv_heads * HEAD, True), heads("v", kv_heads * HEAD, False)
        nodes.append(h.make_node("Attention", [q, k, v, mask, f"past_key_values.{layer}.key", f"past_key_values.{layer}.value"],
                                 [p + "att", f"present.{layer}.key", f"present.{layer}.value"], is_causal=1,
                                 **({"softcap": softcap} if softcap else {})))
        merged = node("Reshape", [node("Transpose", [p + "att"], p + "att_t", perm=[0, 2, 1, 3]), merge_shape], p + "att_m")
        x = node("Add", [x, node("MatMul", [merged, weight(p + "o", HEADS * HEAD, HIDDEN)], p + "o_y")], p + "x1")
        n2 = node("RMSNormalization", [x, const(p + "ln2", np.ones(HIDDEN, dtype))], p + "n2", epsilon=1e-6)
        gate = node("Swish", [node("MatMul", [n2, weight(p + "gate", HIDDEN, FFN)], p + "g")], p + "silu")
        up = node("MatMul", [n2, weight(p + "up", HIDDEN, FFN)], p + "u")
        x = node("Add", [x, node("MatMul", [node("Mul", [gate, up], p + "gu"), weight(p + "down", FFN, HIDDEN)], p + "d")],
                 p + "x2")
    node("MatMul", [node("RMSNormalization", [x, const("lnf", np.ones(HIDDEN, dtype))], "nf", epsilon=1e-6),
                    weight("lm_head", HIDDEN, VOCAB)], "logits")
    kv = lambda name, seq: h.make_tensor_value_info(name, elem, ["batch", kv_heads, seq, HEAD])  # noqa: E731
    inputs = [h.make_tensor_value_info("input_ids", T.INT64, ["batch", "seq"]),
              h.make_tensor_value_info("attention_mask", T.INT64, ["batch", "total"])]
    if position_input:
        inputs.append(h.make_tensor_value_info("position_ids", T.INT64, ["batch", "seq"]))
    outputs = [h.make_tensor_value_info("logits", elem, ["batch", "seq", VOCAB])]
    for layer in range(LAYERS):
        inputs += [kv(f"past_key_values.{layer}.key", "past"), kv(f"past_key_values.{layer}.value", "past")]
        outputs += [kv(f"present.{layer}.key", "total"), kv(f"present.{layer}.value", "total")]
    graph = h.make_graph(nodes, "opset23_decoder", inputs, outputs, initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 24)], ir_version=10)


@pytest.fixture(scope="module", params=[(True, KV_HEADS), (False, KV_HEADS), (True, 1), (True, KV_HEADS, np.float16),
                                        (True, KV_HEADS, np.float32, 1.5)],
                ids=["position_ids", "positions_from_past", "multi_query", "float16", "softcap"])
def decoder(tmp_path_factory, request):
    folder = tmp_path_factory.mktemp("opset23_decoder")
    onnx.save(decoder_graph(*request.param), folder / "model.onnx")
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": CONTEXT, "eos_token_id": 2}))
    return Decoder(folder)


Decoder = collections.namedtuple("Decoder", "folder")
PROMPTS = [[5], [11, 40, 7, 3, 90, 12, 33, 8, 61, 17, 4], list(range(3, 40))]


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"prompt{len(p)}")
def test_generates_onnx_runtimes_tokens_on_the_paged_cache(decoder, prompt):
    n = min(16, CONTEXT - len(prompt))
    assert generate_on_paged_cache(decoder.folder, prompt, n) == ort_greedy(decoder.folder, prompt, n)


def test_a_batch_gives_each_prompt_its_own_tokens(decoder, tmp_path):
    assert generate_batch(decoder.folder, PROMPTS, 12, tmp_path) == [ort_greedy(decoder.folder, p, 12) for p in PROMPTS]
