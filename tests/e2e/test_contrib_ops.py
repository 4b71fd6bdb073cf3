"""ONNX Runtime's contrib ops (domain com.microsoft), which fusor expands at import into ONNX ops
(src/onnx/contrib_ops.cc): each op as a one-node model in several attribute settings, and MiniLM
as ORT's transformer optimizer leaves it, run in ONNX Runtime and in both fusor executors, and
compared elementwise within |a-b| <= 1e-5 + 1e-4*|b|."""
import io

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ort_compare
from conftest import FUSOR, model_path

MS = "com.microsoft"
RNG_SEED = 7
_NP_TO_ONNX = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32,
               np.dtype(np.int64): TensorProto.INT64, np.dtype(np.uint8): TensorProto.UINT8,
               np.dtype(np.int8): TensorProto.INT8}


def rand(*shape):
    return np.random.default_rng(RNG_SEED + len(shape) + sum(shape)).standard_normal(shape).astype(np.float32)


def ids(high, *shape):
    return np.random.default_rng(RNG_SEED + sum(shape)).integers(0, high, shape).astype(np.int32)


def one_node(op, inputs, outputs, feeds, consts=None, domain=MS, opset=17, **attrs):
    """(model, feeds): one `op` node reading `inputs` ("" for an absent one) from `feeds` (graph
    inputs) and `consts` (initializers), writing `outputs` ("" for an unrequested one)."""
    consts = consts or {}
    node = helper.make_node(op, inputs, outputs, domain=domain, name=f"the_{op}", **attrs)
    graph = helper.make_graph(
        [node], op,
        [helper.make_tensor_value_info(k, _NP_TO_ONNX[v.dtype], v.shape) for k, v in feeds.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs if o],
        [onnx.numpy_helper.from_array(v, k) for k, v in consts.items()])
    opsets = [helper.make_opsetid("", opset), helper.make_opsetid(MS, 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8), feeds


def typed_outputs(model, expected):
    """The model with its outputs typed from ONNX Runtime's results (fusor reads output types)."""
    del model.graph.output[:]
    for name, a in expected.items():
        model.graph.output.append(helper.make_tensor_value_info(name, _NP_TO_ONNX[a.dtype], None))
    return model


def run_ort(model, feeds):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    names = [o.name for o in s.get_outputs()]
    return dict(zip(names, s.run(names, feeds)))


B, S, H = 2, 5, 16  # batch, sequence, hidden
x3 = rand(B, S, H)
gamma, beta, bias = rand(H) + 1.0, rand(H + 1)[:H], rand(H + 2)[:H]
mask2d = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], np.int32)
VOCAB, POSITIONS = 23, 9
embed_consts = {"word": rand(VOCAB, H), "pos": rand(POSITIONS, H), "seg": rand(2, H), "gamma": gamma, "beta": beta}


def attention(mask=None, heads=4, sizes=None, **attrs):
    sizes = sizes or [H, H, H]
    feeds = {"x": x3}
    if mask is not None:
        feeds["mask"] = mask
    inputs = ["x", "w", "b", "mask" if mask is not None else ""]
    consts = {"w": rand(H, sum(sizes)) * 0.5, "b": rand(sum(sizes) + 1)[:sum(sizes)]}
    if "attention_bias" in attrs:
        feeds["attention_bias"] = attrs.pop("attention_bias")
        inputs += ["", "attention_bias"]
    if sizes != [H, H, H]:
        attrs["qkv_hidden_sizes"] = sizes
    return one_node("Attention", inputs, ["y"], feeds, consts, num_heads=heads, **attrs)


def bias_add():
    """ONNX Runtime has BiasAdd for CUDA only: the expectation is its spec, x + bias + skip."""
    skip = rand(B, S, H)
    model, feeds = one_node("BiasAdd", ["x", "bias", "skip"], ["y"], {"x": x3, "skip": skip}, {"bias": bias})
    return model, feeds, {"y": x3 + bias + skip}


N, KV, D = 4, 2, 16  # heads, KV heads and head size (ORT's GQA rotary wants a multiple of 16)
MAX_POS = 12


def rotary(rank=3, interleaved=0, rotary_dim=0, positions=None):
    x = rand(B, S, N * D) if rank == 3 else rand(B, N, S, D)
    half = (rotary_dim or D) // 2
    feeds = {"x": x, "position_ids": ids(MAX_POS - S, B, S).astype(np.int64) if positions is None else positions}
    consts = {"cos": rand(MAX_POS, half), "sin": rand(MAX_POS, half + 1)[:, :half].copy()}
    attrs = {"interleaved": interleaved}
    if rank == 3 or rotary_dim:  # ORT wants num_heads with a rotary_embedding_dim
        attrs["num_heads"] = N
    if rotary_dim:
        attrs["rotary_embedding_dim"] = rotary_dim
    return one_node("RotaryEmbedding", ["x", "position_ids", "cos", "sin"], ["y"], feeds, consts, **attrs)


def behind_transpose(model_feeds):
    """x reaches the node through a Transpose, with no value_info: its rank is ONNX shape
    inference's to find (ORT's optimizer keeps little value_info; GPT-NeoX's partial rotary input
    comes out of a Slice)."""
    model, feeds = model_feeds
    x = feeds.pop("x")
    feeds["x_bsnd"] = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
    model.graph.node[0].input[0] = "x_nsd"
    model.graph.node.insert(0, helper.make_node("Transpose", ["x_bsnd"], ["x_nsd"], perm=[0, 2, 1, 3]))
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("x_bsnd", TensorProto.FLOAT, feeds["x_bsnd"].shape))
    return model, feeds


def gqa(packed=False, do_rotary=0, lengths=None, past=0, buffer=0, batch=B, seq=S, **attrs):
    """past: that many keys and values before this step's `seq` (each row's length is then
    past + seq); buffer: the past in a buffer that long (ONNX Runtime GenAI's shared buffer).
    ONNX Runtime takes a past with more than one new token for one row only."""
    feeds = {"q": rand(batch, seq, (N + 2 * KV) * D if packed else N * D) * 0.5}
    if not packed:
        feeds.update(k=rand(batch, seq, KV * D) * 0.5, v=rand(batch, seq, KV * D))
    lengths = lengths or (seq,) * batch
    if past or buffer:
        lengths = (past + seq,) * batch
        for name in ("past_key", "past_value"):
            feeds[name] = rand(batch, KV, max(past, buffer), D)
    feeds["seqlens_k"] = np.array(lengths, np.int32) - 1
    feeds["total_sequence_length"] = np.array(max(lengths), np.int32)
    cache = ["past_key", "past_value"] if past or buffer else ["", ""]
    inputs = ["q", "" if packed else "k", "" if packed else "v", *cache, "seqlens_k", "total_sequence_length"]
    consts = {}
    if do_rotary:
        inputs += ["cos", "sin"]
        consts = {"cos": np.cos(np.outer(np.arange(MAX_POS), np.arange(D // 2))).astype(np.float32),
                  "sin": np.sin(np.outer(np.arange(MAX_POS), np.arange(D // 2))).astype(np.float32)}
    return one_node("GroupQueryAttention", inputs, ["y", "present_key", "present_value"], feeds, consts,
                    num_heads=N, kv_num_heads=KV, do_rotary=do_rotary, **attrs)


CASES = {
    "FusedMatMul-batched": lambda: one_node("FusedMatMul", ["a", "b"], ["y"], {"a": rand(2, 3, 4, 5), "b": rand(2, 3, 5, 6)}),
    "FusedMatMul-transA-alpha": lambda: one_node("FusedMatMul", ["a", "b"], ["y"], {"a": rand(3, 5, 4), "b": rand(3, 5, 6)},
                                                 transA=1, alpha=0.25),
    "FusedMatMul-transB-weight": lambda: one_node("FusedMatMul", ["a", "b"], ["y"], {"a": rand(2, 4, 5)}, {"b": rand(6, 5)},
                                                  transB=1),
    "FusedMatMul-transA-transB": lambda: one_node("FusedMatMul", ["a", "b"], ["y"], {"a": rand(2, 5, 4), "b": rand(2, 6, 5)},
                                                  transA=1, transB=1, alpha=-1.5),
    "BiasGelu": lambda: one_node("BiasGelu", ["x", "bias"], ["y"], {"x": x3}, {"bias": bias}),
    "FastGelu-bias": lambda: one_node("FastGelu", ["x", "bias"], ["y"], {"x": x3, "bias": bias}),
    "FastGelu": lambda: one_node("FastGelu", ["x"], ["y"], {"x": rand(3, 7) * 3}),
    "Gelu": lambda: one_node("Gelu", ["x"], ["y"], {"x": rand(3, 7) * 3}),
    "QuickGelu": lambda: one_node("QuickGelu", ["x"], ["y"], {"x": rand(4, 6) * 3}),
    "QuickGelu-alpha": lambda: one_node("QuickGelu", ["x"], ["y"], {"x": rand(4, 6) * 3}, alpha=1.0),
    "BiasAdd": lambda: bias_add(),
    "SkipLayerNormalization": lambda: one_node(
        "SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["y"], {"x": x3, "skip": rand(B, S, H)},
        {"gamma": gamma, "beta": beta, "bias": bias}, epsilon=1e-5),
    "SkipLayerNormalization-no-beta-bias": lambda: one_node(
        "SkipLayerNormalization", ["x", "skip", "gamma"], ["y"], {"x": x3, "skip": rand(B, S, H)}, {"gamma": gamma}),
    "SkipLayerNormalization-sum-output": lambda: one_node(
        "SkipLayerNormalization", ["x", "skip", "gamma", "beta", "bias"], ["y", "", "", "sum"],
        {"x": x3, "skip": rand(B, S, H)}, {"gamma": gamma, "beta": beta, "bias": bias}, epsilon=1e-6),
    "SimplifiedLayerNormalization": lambda: one_node(
        "SimplifiedLayerNormalization", ["x", "scale"], ["y"], {"x": x3}, {"scale": gamma}, domain="", epsilon=1e-6),
    "SimplifiedLayerNormalization-axis-inv-std": lambda: one_node(
        "SimplifiedLayerNormalization", ["x", "scale"], ["y", "inv_std"], {"x": x3}, {"scale": rand(S, H)}, domain="",
        axis=-2),
    "SimplifiedLayerNormalization-positive-axis": lambda: one_node(
        "SimplifiedLayerNormalization", ["x", "scale"], ["y"], {"x": x3}, {"scale": rand(S, H)}, domain="", axis=1),
    "SkipSimplifiedLayerNormalization": lambda: one_node(
        "SkipSimplifiedLayerNormalization", ["x", "skip", "gamma", "bias"], ["y"], {"x": x3, "skip": rand(B, S, H)},
        {"gamma": gamma, "bias": bias}, epsilon=1e-6),
    "SkipSimplifiedLayerNormalization-outputs": lambda: one_node(
        "SkipSimplifiedLayerNormalization", ["x", "skip", "gamma"], ["y", "", "inv_std", "sum"],
        {"x": x3, "skip": rand(B, S, H)}, {"gamma": gamma}),
    "EmbedLayerNormalization-bert": lambda: one_node(
        "EmbedLayerNormalization", ["ids", "seg_ids", "word", "pos", "seg", "gamma", "beta", "mask"], ["y", "mask_index"],
        {"ids": ids(VOCAB, B, S), "seg_ids": ids(2, B, S), "mask": mask2d}, embed_consts),
    "EmbedLayerNormalization-sum-no-segment": lambda: one_node(
        "EmbedLayerNormalization", ["ids", "", "word", "pos", "", "gamma", "beta"], ["y", "mask_index", "sum"],
        {"ids": ids(VOCAB, B, S)}, embed_consts, epsilon=1e-5),
    "EmbedLayerNormalization-position-ids": lambda: one_node(
        "EmbedLayerNormalization", ["ids", "seg_ids", "word", "pos", "seg", "gamma", "beta", "", "position_ids"],
        ["y", "mask_index"],
        {"ids": ids(VOCAB, B, S), "seg_ids": ids(2, B, S), "position_ids": ids(POSITIONS, B, S)}, embed_consts),
    "Attention-no-mask": lambda: attention(),
    "Attention-mask-index": lambda: attention(np.array([3, 5], np.int32)),
    "Attention-2d-mask": lambda: attention(mask2d, heads=2),
    "Attention-2d-mask-filter": lambda: attention(mask2d, mask_filter_value=-3.4028234663852886e38),
    "Attention-3d-mask": lambda: attention(np.tril(np.ones((B, S, S), np.int32)), heads=8),
    "Attention-unidirectional": lambda: attention(heads=2, unidirectional=1),
    "Attention-scale-sizes": lambda: attention(mask2d, heads=2, sizes=[8, 8, 12], scale=0.3),
    "Attention-bias": lambda: attention(mask2d, heads=4, attention_bias=rand(B, 4, S, S)),
    "RotaryEmbedding-3d": lambda: rotary(),
    "RotaryEmbedding-4d-interleaved": lambda: rotary(rank=4, interleaved=1),
    "RotaryEmbedding-partial": lambda: rotary(rotary_dim=4),
    "RotaryEmbedding-partial-interleaved-4d": lambda: rotary(rank=4, interleaved=1, rotary_dim=4),
    "RotaryEmbedding-4d-rank-by-shape-inference": lambda: behind_transpose(rotary(rank=4, rotary_dim=4)),
    "RotaryEmbedding-offset": lambda: rotary(positions=np.array([3], np.int64)),
    "GroupQueryAttention": lambda: gqa(),
    "GroupQueryAttention-packed-rotary": lambda: gqa(packed=True, do_rotary=1),
    "GroupQueryAttention-rotary-interleaved-scale": lambda: gqa(do_rotary=1, rotary_interleaved=1, scale=0.2),
    "GroupQueryAttention-softcap": lambda: gqa(softcap=2.0),
    "GroupQueryAttention-right-padded": lambda: gqa(lengths=(3, S)),
    "GroupQueryAttention-past-one-row": lambda: gqa(past=4, batch=1, do_rotary=1),
    "GroupQueryAttention-past-decode-step": lambda: gqa(past=6, seq=1, do_rotary=1),
    "GroupQueryAttention-shared-buffer-decode-step": lambda: gqa(past=3, buffer=MAX_POS, seq=1, do_rotary=1),
}


@pytest.fixture(scope="module")
def ort_cases(tmp_path_factory):
    """name -> (model path, inputs dir, expected outputs), built once for both executors."""
    cache = {}

    def get(name):
        if name not in cache:
            model, feeds, *spec = CASES[name]()
            expected = spec[0] if spec else run_ort(model, feeds)
            d = tmp_path_factory.mktemp(name)
            onnx.save(typed_outputs(model, expected), d / "model.onnx")
            save_inputs(d / "inputs", feeds)
            cache[name] = (d / "model.onnx", d / "inputs", expected)
        return cache[name]

    return get


def save_inputs(d, feeds):
    """As ort_compare.save_npy_dir, but rank 0 stays rank 0 (np.ascontiguousarray makes it 1-D)."""
    d.mkdir(parents=True, exist_ok=True)
    for name, a in feeds.items():
        np.save(d / ort_compare.npy_name(name), a, allow_pickle=False)


def check(model, inputs_dir, expected, executor, out_dir):
    extra = ["--reference"] if executor == "reference" else []
    ort_compare.run_fusor(FUSOR, model, inputs_dir, out_dir, extra)
    report = io.StringIO()
    ok = ort_compare.compare(out_dir, expected, out=report)
    print(report.getvalue())
    assert ok, report.getvalue()


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_onnx_runtime(name, executor, ort_cases, tmp_path):
    check(*ort_cases(name), executor, tmp_path)


# MiniLM from scripts/make-ort-optimized-minilm.py (run by scripts/get-models): packed-QKV
# Attention fed by EmbedLayerNormalization's mask_index, or by the raw 2-D mask.
MODEL_CASES = [("minilm-l6-ort", 2, 16, False), ("minilm-l6-ort", 1, 7, False), ("minilm-l6-ort", 3, 12, True),
               ("minilm-l6-ort-rawmask", 2, 16, False), ("minilm-l6-ort-rawmask", 3, 12, True)]


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("model,batch,seq,padded", MODEL_CASES)
def test_ort_optimized_minilm_matches_onnx_runtime(model, batch, seq, padded, executor, tmp_path):
    path = model_path(model)
    feeds = ort_compare.make_inputs(path, batch, seq)
    if padded:  # right padding, the only kind ORT's mask_index expresses
        for row in range(1, batch):
            feeds["attention_mask"][row, seq - 2 * row:] = 0
    ort_compare.save_npy_dir(tmp_path / "inputs", feeds)
    expected = ort_compare.run_ort(path, feeds)
    check(path, tmp_path / "inputs", expected, executor, tmp_path / "fusor")


def test_unknown_contrib_op_is_unsupported(tmp_path, fusor):
    model, feeds = one_node("NoSuchFusedThing", ["x"], ["y"], {"x": x3})
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    onnx.save(model, tmp_path / "model.onnx")
    ort_compare.save_npy_dir(tmp_path / "inputs", feeds)
    r = fusor("run", tmp_path / "model.onnx", *ort_compare.fusor_input_args(tmp_path / "inputs"))
    assert r.returncode != 0
    assert "NoSuchFusedThing (com.microsoft opset 1, first at node 'the_NoSuchFusedThing')" in r.stderr, r.stderr


def test_unsupported_attention_input_names_the_node(tmp_path, fusor):
    model, feeds = attention(do_rotary=1)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    onnx.save(model, tmp_path / "model.onnx")
    ort_compare.save_npy_dir(tmp_path / "inputs", feeds)
    r = fusor("run", tmp_path / "model.onnx", *ort_compare.fusor_input_args(tmp_path / "inputs"))
    assert r.returncode != 0
    assert "the_Attention" in r.stderr and "do_rotary" in r.stderr, r.stderr


def fused_kinds(fusor, model, out):
    """{kind: count} from `fusor optimize`'s summary, e.g. "... 51 items fused (Attention 6, ...)"."""
    r = fusor("optimize", model, "--batch", 2, "--seq", 16, "-o", out)
    assert r.returncode == 0, r.stderr
    summary = next(line for line in r.stdout.splitlines() if line.startswith("optimized "))
    counts = summary.split(" items fused (")[1].split(")")[0]
    return {kind: int(n) for kind, n in (item.rsplit(" ", 1) for item in counts.split(", "))}


@pytest.mark.parametrize("model", ["minilm-l6-ort", "minilm-l6-ort-rawmask"])
def test_ort_optimized_minilm_fuses_like_the_plain_export(model, fusor, tmp_path):
    plain = fused_kinds(fusor, model_path("minilm-l6"), tmp_path / "plain.onnx")
    ort = fused_kinds(fusor, model_path(model), tmp_path / "ort.onnx")
    print(f"plain {plain}\n{model} {ort}")
    assert plain["Attention"] == 6 and plain["LayerNorm"] == 13
    if model == "minilm-l6-ort":
        # mask_index (valid lengths) becomes the mask bias through int64 Range/Less, which the
        # elementwise pass leaves alone: the plain export's mask item is the one fewer.
        assert ort.pop("Elementwise") == plain.pop("Elementwise") - 1
    assert ort == plain


@pytest.mark.parametrize("batch", [1, 2])
def test_attention_refuses_mask_index_of_ends_and_starts(batch, tmp_path, fusor):
    """mask_index [2B] (end and start positions) is not supported: an error, not another batch."""
    model, feeds = one_node("Attention", ["x", "w", "b", "mask"], ["y"],
                            {"x": rand(batch, S, H), "mask": np.array([3, 5, 0, 0][:2 * batch], np.int32)},
                            {"w": rand(H, 3 * H), "b": rand(3 * H)}, num_heads=4)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, None))
    onnx.save(model, tmp_path / "model.onnx")
    save_inputs(tmp_path / "inputs", feeds)
    r = fusor("run", tmp_path / "model.onnx", *ort_compare.fusor_input_args(tmp_path / "inputs"))
    assert r.returncode != 0
    assert "the_Attention/" in r.stderr and f"cannot reshape [{2 * batch}]" in r.stderr, r.stderr
