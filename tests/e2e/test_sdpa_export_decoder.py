"""A decoder in the form torch's TorchScript exporter (torch.onnx.export with dynamo=False) writes
for transformers' default attention since 4.36, scaled_dot_product_attention:
  - Q and K^T each multiplied by sqrt(scale) before Q K^T;
  - the KV-head repeat (Unsqueeze, Expand, Reshape) sized off the present's shape, and the
    attention's output reshaped by the head size read off the repeated values' shape;
  - a guard Where(IsNaN(p), 0, p) after the softmax, which reads the probabilities twice;
  - the present a Cast of the Concat to the type it has, which the attention reads (GPT-J's).
And the same with transformers 5's sliding-window cache (Mistral's, and Gemma's in every other
layer), which cuts the past to its last WINDOW - 1 positions before the Concat and the present
after it, with a window mask; and in
float16 (computed in float32, the paged pool in float32).
fusor must generate ONNX Runtime's greedy tokens on the paged KV cache, alone and in a batch, and
fusor serve must serve each with continuous batching."""
import collections
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h, numpy_helper

from conftest import run_fusor
from decoder_checks import assert_served_like_generate, generate_batch, generate_on_paged_cache, ort_greedy

VOCAB, HIDDEN, HEADS, KV_HEADS, HEAD, LAYERS, CONTEXT, WINDOW = 97, 32, 4, 2, 8, 2, 64, 6
LAST = np.iinfo(np.int64).max


def decoder_graph(window=0, dtype=np.float32):
    """window 0: full causal attention; else a sliding window of `window` positions in the even
    layers, with their past cut to its last window - 1 positions, as transformers 5's sliding-window
    cache exports (Gemma 2 and 3 alternate such layers with full ones).
    dtype float16: weights, cache and logits in float16, as a model.half() export."""
    elem = T.FLOAT16 if dtype == np.float16 else T.FLOAT
    rng = np.random.default_rng(36)
    inits, nodes = [], []

    def const(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(name, *shape):
        return const(name, (rng.standard_normal(shape) * 0.3).astype(dtype))

    def node(op, ins, out, **attrs):
        nodes.append(h.make_node(op, ins, [out], **attrs))
        return out

    def dim(x, axis, out):  # Gather(Shape(x), axis), a scalar
        return node("Gather", [node("Shape", [x], out + "_shape"), const(out + "_axis", np.array(axis, np.int64))], out)

    def unsq(x, out):
        return node("Unsqueeze", [x, "axis0"], out)

    def last_positions(x, kept, out):  # x[:, :, -kept:]
        return node("Slice", [x, const(out + "_start", np.array([-kept], np.int64)), "to_end", "axis2"], out)

    const("axis0", np.array([0], np.int64))
    const("axis2", np.array([2], np.int64))
    const("to_end", np.array([LAST], np.int64))
    const("zero", np.array(0, np.int64))
    const("one", np.array(1, np.int64))
    const("repeat", np.array([HEADS // KV_HEADS], np.int64))
    const("sqrt_scale", np.array(HEAD ** -0.25, dtype))
    const("masked", np.array(np.finfo(dtype).min, dtype))
    const("zero_f", np.array(0, dtype))
    x = node("Gather", [weight("embed", VOCAB, HIDDEN), "input_ids"], "embedded")
    tokens = dim("input_ids", 1, "tokens")
    for i in range(LAYERS):
        p = f"l{i}_"
        layer_window = window if i % 2 == 0 else 0

        def heads(name, n):
            y = node("MatMul", [x, weight(p + name + "_w", HIDDEN, n * HEAD)], p + name + "_proj")
            y = node("Reshape", [y, const(p + name + "_split", np.array([0, 0, n, HEAD], np.int64))], p + name + "_split_out")
            return node("Transpose", [y], p + name, perm=[0, 2, 1, 3])

        q, k, v = heads("q", HEADS), heads("k", KV_HEADS), heads("v", KV_HEADS)
        present = {}
        for kind, new in (("key", k), ("value", v)):
            past = f"past_key_values.{i}.{kind}"
            if layer_window:
                past = last_positions(past, layer_window - 1, p + kind + "_past_kept")
            full = node("Concat", [past, new], p + kind + "_all", axis=2)
            if layer_window:
                last_positions(full, layer_window - 1, f"present.{i}.{kind}")
            else:  # read through a Cast to the type it has, as TorchScript's GPT-J export does
                full = node("Cast", [full], f"present.{i}.{kind}", to=elem)
            # The KV-head repeat, sized off the present's shape as the TorchScript export does.
            b, kvh, s, d = (dim(full, a, f"{p}{kind}_dim{a}") for a in range(4))
            expanded = node("Expand", [node("Unsqueeze", [full, "axis2"], p + kind + "_unsq"),
                                       node("Concat", [unsq(b, p + kind + "_b"), unsq(kvh, p + kind + "_kvh"), "repeat",
                                                       unsq(s, p + kind + "_s"), unsq(d, p + kind + "_dd")],
                                            p + kind + "_expand_shape", axis=0)], p + kind + "_expanded")
            heads_all = node("Mul", [unsq(kvh, p + kind + "_kvh2"), "repeat"], p + kind + "_heads")
            present[kind] = node("Reshape", [expanded, node("Concat", [unsq(b, p + kind + "_b2"), heads_all,
                                                                         unsq(s, p + kind + "_s2"), unsq(d, p + kind + "_dd2")],
                                                            p + kind + "_repeat_shape", axis=0)], p + kind + "_repeated")
        key_t = node("Mul", [node("Transpose", [present["key"]], p + "key_t", perm=[0, 1, 3, 2]), "sqrt_scale"], p + "key_scaled")
        scores = node("MatMul", [node("Mul", [q, "sqrt_scale"], p + "q_scaled"), key_t], p + "scores")
        # The mask from shapes: key j seen by query i when j <= i + seen past (and within the
        # window), and where attention_mask's last S positions are 1.
        keys = dim(present["key"], 2, p + "keys")
        seen = node("Sub", [keys, tokens], p + "seen_past")
        rows = node("Unsqueeze", [node("Range", ["zero", tokens, "one"], p + "q_idx"), const(p + "ax1", np.array([1], np.int64))],
                    p + "q_col")
        cols = node("Range", ["zero", keys, "one"], p + "k_idx")
        last_seen = node("Add", [rows, seen], p + "last_seen")
        allowed = node("LessOrEqual", [cols, last_seen], p + "causal")
        if layer_window:
            first_seen = node("Sub", [last_seen, const(p + "window", np.array(layer_window, np.int64))], p + "first_seen")
            allowed = node("And", [allowed, node("Greater", [cols, first_seen], p + "in_window")], p + "windowed")
        pad = node("Slice", ["attention_mask", node("Neg", [unsq(keys, p + "keys1")], p + "neg_keys"), "to_end",
                             const(p + "ax1b", np.array([1], np.int64))], p + "pad")
        pad = node("Unsqueeze", [node("Cast", [pad], p + "pad_bool", to=T.BOOL), const(p + "ax12", np.array([1, 2], np.int64))],
                   p + "pad4")
        allowed = node("And", [allowed, pad], p + "allowed")
        bias = node("Where", [allowed, "zero_f", "masked"], p + "bias")
        probs = node("Softmax", [node("Add", [scores, bias], p + "masked_scores")], p + "probs", axis=-1)
        guarded = node("Where", [node("IsNaN", [probs], p + "nan"), "zero_f", probs], p + "guarded")
        out = node("Transpose", [node("MatMul", [guarded, present["value"]], p + "attended")], p + "attn_t", perm=[0, 2, 1, 3])
        # [B, S, H * D], the head size read off the repeated values' shape.
        width = node("Mul", [unsq(dim(present["value"], 3, p + "v_d3"), p + "v_d3u"), const(p + "heads", np.array([HEADS], np.int64))],
                     p + "width")
        merged = node("Reshape", [out, node("Concat", [unsq(dim(out, 0, p + "o_b"), p + "o_b1"), unsq(tokens, p + "o_s1"), width],
                                             p + "merge_shape", axis=0)], p + "merged")
        x = node("Add", [x, node("MatMul", [merged, weight(p + "o_w", HIDDEN, HIDDEN)], p + "o_proj")], p + "residual")
    node("MatMul", [x, weight("lm_head", HIDDEN, VOCAB)], "logits")

    past_shape = ["batch", KV_HEADS, "past", HEAD]
    present_shape = ["batch", KV_HEADS, "total", HEAD]
    cache = [(i, kind) for i in range(LAYERS) for kind in ("key", "value")]
    inputs = [h.make_tensor_value_info("input_ids", T.INT64, ["batch", "seq"]),
              h.make_tensor_value_info("attention_mask", T.INT64, ["batch", "all"]),
              h.make_tensor_value_info("position_ids", T.INT64, ["batch", "seq"])]
    inputs += [h.make_tensor_value_info(f"past_key_values.{i}.{kind}", elem, past_shape) for i, kind in cache]
    outputs = [h.make_tensor_value_info("logits", elem, ["batch", "seq", VOCAB])]
    outputs += [h.make_tensor_value_info(f"present.{i}.{kind}", elem, present_shape) for i, kind in cache]
    graph = h.make_graph(nodes, "sdpa_decoder", inputs, outputs, inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    return model


Decoder = collections.namedtuple("Decoder", "folder window")
PROMPTS = [[5], [11, 40, 7, 3, 90, 12, 33, 8, 61, 17, 4], list(range(3, 40))]


@pytest.fixture(scope="module", params=[(0, np.float32), (WINDOW, np.float32), (0, np.float16)],
                ids=["causal", "sliding_window", "float16"])
def decoder(tmp_path_factory, request):
    window, dtype = request.param
    folder = tmp_path_factory.mktemp(f"sdpa_window{window}")
    onnx.save(decoder_graph(window, dtype), str(folder / "model.onnx"))
    (folder / "config.json").write_text(json.dumps({"max_position_embeddings": CONTEXT, "eos_token_id": 2}))
    return Decoder(folder, window)


@pytest.mark.parametrize("prompt", PROMPTS, ids=lambda p: f"prompt{len(p)}")
def test_generates_onnx_runtimes_tokens_on_the_paged_cache(decoder, prompt):
    n = min(16, CONTEXT - len(prompt))
    assert generate_on_paged_cache(decoder.folder, prompt, n) == ort_greedy(decoder.folder, prompt, n)


def test_a_batch_gives_each_prompt_its_own_tokens(decoder, tmp_path):
    assert generate_batch(decoder.folder, PROMPTS, 12, tmp_path) == [ort_greedy(decoder.folder, p, 12) for p in PROMPTS]


def test_the_window_changes_the_tokens(tmp_path):
    """The window case is a real test only if the window hides keys the plain causal model sees."""
    tokens = {}
    for window in (0, WINDOW):
        folder = tmp_path / f"window{window}"
        folder.mkdir()
        onnx.save(decoder_graph(window), str(folder / "model.onnx"))
        tokens[window] = ort_greedy(folder, PROMPTS[2], 8)
    assert tokens[0] != tokens[WINDOW]


def test_the_plain_loop_feeds_back_a_cut_cache(tmp_path):
    """With fusion off, the plain loop feeds each layer's present back as it is, cut to the window
    or whole, with the mask over every position so far, as ONNX Runtime runs the export."""
    folder = tmp_path / "windowed"
    folder.mkdir()
    onnx.save(decoder_graph(WINDOW), str(folder / "model.onnx"))
    for prompt in PROMPTS:
        r = run_fusor("generate", str(folder), "--prompt-ids", ",".join(map(str, prompt)), "--max-new-tokens", 12,
                      "--ignore-eos", "--json", "--stats", "--no-fusion")
        assert r.returncode == 0, r.stderr
        assert "plain loop" in r.stderr, r.stderr
        assert json.loads(r.stdout)["output_ids"] == ort_greedy(folder, prompt, 12)


def test_fusor_serve_serves_it(decoder, tmp_path):
    """Three greedy /v1/completions at once give fusor generate's text. The windowed decoder serves
    with the precision gate off: the gate runs the export as it is at a past of 16, longer than
    the window's cache (5) ever is, where the export cannot run."""
    config = "fusion:\n  precision_check: off\n" if decoder.window else ""
    assert_served_like_generate(decoder.folder, PROMPTS, tmp_path, config)
