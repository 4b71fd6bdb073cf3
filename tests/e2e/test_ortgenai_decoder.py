"""A decoder in the layout ONNX Runtime GenAI's model builder writes: no position_ids, the
attention mask reduced to GroupQueryAttention's seqlens_k and total_sequence_length, rotary
embeddings and the KV cache inside GroupQueryAttention, and a cache whose head size is a named
dim ("kv_cache_dim") that genai_config.json gives. fusor generate runs it on the paged KV cache
(GroupQueryAttention's write into the past proven a concatenation, the positions taken from the
new position_ids input) and must give ONNX Runtime's greedy tokens, alone and in a batch; and
fusor serve serves it with continuous batching."""
import json

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T, helper as h, numpy_helper

from decoder_checks import assert_served_like_generate, generate_batch, generate_on_paged_cache

VOCAB, HEADS, KV_HEADS, HEAD, LAYERS, CONTEXT = 61, 4, 2, 16, 2, 48
HIDDEN = HEADS * HEAD
MS = "com.microsoft"


def builder_layout_decoder():
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def weight(name, *shape):
        inits.append(numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name))
        return name

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    angles = np.outer(np.arange(CONTEXT), 1.0 / 10000 ** (np.arange(0, HEAD, 2) / HEAD))
    const("cos_cache", np.cos(angles).astype(np.float32))
    const("sin_cache", np.sin(angles).astype(np.float32))
    nodes += [h.make_node("ReduceSum", ["attention_mask", const("axis1", np.array([1], np.int64))], ["valid"], keepdims=0),
              h.make_node("Sub", ["valid", const("one", np.array(1, np.int64))], ["seqlens"]),
              h.make_node("Cast", ["seqlens"], ["seqlens_k"], to=T.INT32),
              h.make_node("Shape", ["attention_mask"], ["mask_shape"]),
              h.make_node("Gather", ["mask_shape", const("one_index", np.array(1, np.int64))], ["total"]),
              h.make_node("Cast", ["total"], ["total_sequence_length"], to=T.INT32),
              h.make_node("Gather", [weight("embed", VOCAB, HIDDEN), "input_ids"], ["x0"])]
    x = "x0"
    for layer in range(LAYERS):
        p = f"l{layer}."
        nodes += [
            h.make_node("SimplifiedLayerNormalization", [x, const(p + "ln", np.ones(HIDDEN, np.float32))], [p + "n"],
                        epsilon=1e-6),
            h.make_node("MatMul", [p + "n", weight(p + "qkv", HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD)], [p + "qkv_y"]),
            h.make_node("GroupQueryAttention",
                        [p + "qkv_y", "", "", f"past_key_values.{layer}.key", f"past_key_values.{layer}.value",
                         "seqlens_k", "total_sequence_length", "cos_cache", "sin_cache"],
                        [p + "att", f"present.{layer}.key", f"present.{layer}.value"], domain=MS,
                        num_heads=HEADS, kv_num_heads=KV_HEADS, do_rotary=1),
            h.make_node("MatMul", [p + "att", weight(p + "o", HIDDEN, HIDDEN)], [p + "o_y"]),
            h.make_node("Add", [x, p + "o_y"], [p + "x"])]
        x = p + "x"
    nodes.append(h.make_node("MatMul", [x, weight("lm_head", HIDDEN, VOCAB)], ["logits"]))
    kv = lambda name, seq: h.make_tensor_value_info(name, T.FLOAT, ["batch", KV_HEADS, seq, "kv_cache_dim"])  # noqa: E731
    inputs = [h.make_tensor_value_info("input_ids", T.INT64, ["batch", "seq"]),
              h.make_tensor_value_info("attention_mask", T.INT64, ["batch", "total"])]
    outputs = [h.make_tensor_value_info("logits", T.FLOAT, ["batch", "seq", VOCAB])]
    for layer in range(LAYERS):
        inputs += [kv(f"past_key_values.{layer}.key", "past"), kv(f"past_key_values.{layer}.value", "past")]
        outputs += [kv(f"present.{layer}.key", "total"), kv(f"present.{layer}.value", "total")]
    graph = h.make_graph(nodes, "builder_layout_decoder", inputs, outputs, initializer=inits)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 17), h.make_opsetid(MS, 1)], ir_version=8)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ortgenai_decoder")
    onnx.save(builder_layout_decoder(), folder / "model.onnx")
    genai = {"model": {"context_length": CONTEXT, "eos_token_id": 2,
                       "decoder": {"filename": "model.onnx", "head_size": HEAD, "num_key_value_heads": KV_HEADS,
                                   "inputs": {"input_ids": "input_ids", "attention_mask": "attention_mask",
                                              "past_key_names": "past_key_values.%d.key",
                                              "past_value_names": "past_key_values.%d.value"},
                                   "outputs": {"logits": "logits", "present_key_names": "present.%d.key",
                                               "present_value_names": "present.%d.value"}}}}
    (folder / "genai_config.json").write_text(json.dumps(genai))
    return folder


def ort_greedy(folder, prompt, n):
    session = ort.InferenceSession(str(folder / "model.onnx"))
    past = {f"past_key_values.{i}.{t}": np.zeros((1, KV_HEADS, 0, HEAD), np.float32)
            for i in range(LAYERS) for t in ("key", "value")}
    ids, out, feed = list(prompt), [], list(prompt)
    for _ in range(n):
        res = session.run(None, {"input_ids": np.array([feed], np.int64),
                                 "attention_mask": np.ones((1, len(ids)), np.int64), **past})
        out.append(int(res[0][0, -1].argmax()))
        ids.append(out[-1])
        feed = [out[-1]]
        past = {name: res[1 + j] for j, name in enumerate(past)}
    return out


PROMPTS = [[5], [9, 30, 4, 17, 52, 8, 3], list(range(3, 30))]


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"prompt{len(p)}")
def test_generates_onnx_runtimes_tokens(decoder, prompt):
    assert generate_on_paged_cache(decoder, prompt, 12) == ort_greedy(decoder, prompt, 12)


def test_a_batch_gives_each_prompt_its_own_tokens(decoder, tmp_path):
    assert generate_batch(decoder, PROMPTS, 10, tmp_path) == [ort_greedy(decoder, p, 10) for p in PROMPTS]


def test_fusor_serve_serves_it(decoder, tmp_path):
    """Four greedy /v1/completions at once give fusor generate's text."""
    assert_served_like_generate(decoder, PROMPTS + [[40, 41]], tmp_path)
