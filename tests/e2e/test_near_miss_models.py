"""Near misses: small models that look like LayerNorm or GELU but are not (another axis, another
exponent, other constants), next to the real patterns (and RMSNorm, which fuses as the LayerNorm
kind without its centering). fusor must compute each like ONNX Runtime, fuse the real ones and
decline the look-alikes (with the reason in the profile JSON), and `fusor optimize` must write
LayerNorm/Gelu functions only for the real ones.

The models are built with onnx.helper: no torch, a few milliseconds each."""
import collections
import json

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ort_compare
from conftest import FUSOR, run_fusor

OPSET = 17
HIDDEN = 16


def const(name, value):
    return numpy_helper.from_array(np.asarray(value, dtype=np.float32), name)


def make(nodes, inits, path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4, HIDDEN])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4, HIDDEN])
    g = helper.make_graph(nodes, "near_miss", [x], [y], initializer=inits)
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return path


def layer_norm(path, axis=-1, exponent=2.0, eps=1e-5):
    rng = np.random.default_rng(1)
    n = helper.make_node
    nodes = [
        n("ReduceMean", ["x"], ["mean"], axes=[axis], keepdims=1, name="mean"),
        n("Sub", ["x", "mean"], ["c"], name="sub"),
        n("Pow", ["c", "exp"], ["sq"], name="pow"),
        n("ReduceMean", ["sq"], ["var"], axes=[axis], keepdims=1, name="var"),
        n("Add", ["var", "eps"], ["ve"], name="add_eps"),
        n("Sqrt", ["ve"], ["sd"], name="sqrt"),
        n("Div", ["c", "sd"], ["normed"], name="div"),
        n("Mul", ["normed", "gamma"], ["scaled"], name="gamma"),
        n("Add", ["scaled", "beta"], ["y"], name="beta"),
    ]
    inits = [const("exp", exponent), const("eps", eps), const("gamma", 1 + 0.1 * rng.standard_normal(HIDDEN)),
             const("beta", 0.1 * rng.standard_normal(HIDDEN))]
    return make(nodes, inits, path)


def gelu_erf(path, divisor=1.4142135623730951):
    n = helper.make_node
    nodes = [
        n("Div", ["x", "k"], ["scaled"], name="div"),
        n("Erf", ["scaled"], ["e"], name="erf"),
        n("Add", ["e", "one"], ["onep"], name="add1"),
        n("Mul", ["x", "onep"], ["m"], name="mul"),
        n("Mul", ["m", "half"], ["y"], name="half"),
    ]
    return make(nodes, [const("k", divisor), const("one", 1.0), const("half", 0.5)], path)


def gelu_tanh(path):
    n = helper.make_node
    nodes = [
        n("Pow", ["x", "three"], ["cube"], name="pow"),
        n("Mul", ["c", "cube"], ["kc"], name="mul_c"),
        n("Add", ["x", "kc"], ["inner"], name="add_inner"),
        n("Mul", ["inner", "s"], ["arg"], name="mul_s"),
        n("Tanh", ["arg"], ["t"], name="tanh"),
        n("Add", ["t", "one"], ["onep"], name="add1"),
        n("Mul", ["x", "onep"], ["m"], name="mul"),
        n("Mul", ["m", "half"], ["y"], name="half"),
    ]
    inits = [const("three", 3.0), const("c", 0.044715), const("s", 0.7978845608028654), const("one", 1.0),
             const("half", 0.5)]
    return make(nodes, inits, path)


def rms_norm(path):
    n = helper.make_node
    nodes = [
        n("Pow", ["x", "two"], ["sq"], name="pow"),
        n("ReduceMean", ["sq"], ["ms"], axes=[-1], keepdims=1, name="mean"),
        n("Add", ["ms", "eps"], ["mse"], name="add_eps"),
        n("Sqrt", ["mse"], ["rms"], name="sqrt"),
        n("Reciprocal", ["rms"], ["inv"], name="inv"),
        n("Mul", ["x", "inv"], ["normed"], name="mul"),
        n("Mul", ["normed", "g"], ["y"], name="gamma"),
    ]
    inits = [const("two", 2.0), const("eps", 1e-6), const("g", np.linspace(0.5, 1.5, HIDDEN))]
    return make(nodes, inits, path)


# name: (builder, the kind that must be fused or None, (pass, reason fragment) it must be declined with)
CASES = {
    "layernorm": (layer_norm, "LayerNorm", None),
    "layernorm_axis1": (lambda p: layer_norm(p, axis=1), None,
                        ("fuse_layer_norm", "axes not at the end")),
    # A mean of cubes can be negative: a large epsilon keeps the square root real.
    "layernorm_pow3": (lambda p: layer_norm(p, exponent=3.0, eps=20.0), None,
                       ("fuse_layer_norm", "Pow exponent is not 2")),
    "gelu_erf": (gelu_erf, "Gelu", None),
    "gelu_tanh": (gelu_tanh, "Gelu", None),
    "gelu_lookalike": (lambda p: gelu_erf(p, divisor=1.5), None, ("fuse_gelu", "erf's argument scale")),
    "rmsnorm": (rms_norm, "LayerNorm", None),  # LLaMA's norm: the LayerNorm kind with rms = 1
}
PATTERN_KINDS = {"LayerNorm", "Gelu"}


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("FUSOR_CACHE_DIR", str(tmp_path_factory.mktemp("fusor-cache")))
    yield
    mp.undo()


def fused_kinds(path):
    kinds = collections.Counter()
    for node in onnx.load(str(path)).graph.node:
        if node.domain == "fusor":
            kinds.update(a.s.decode() for a in node.attribute if a.name == "fusor_kind")
    return kinds


@pytest.mark.parametrize("name", sorted(CASES))
def test_near_miss(name, tmp_path):
    build, kind, declined = CASES[name]
    model = build(tmp_path / f"{name}.onnx")
    # The expected numbers come from ONNX Runtime with its graph optimizations off: its own
    # LayerNorm fusion (ORT 1.30, from the basic level up) takes the Pow-3 look-alike for a
    # LayerNorm and computes something else, the matcher bug these near misses guard against.
    inputs = ort_compare.make_inputs(model, 2, 4)
    ort_compare.save_npy_dir(tmp_path / "inputs", inputs)
    expected = ort_compare.run_ort(model, inputs, level="disabled")

    # Same numbers as ONNX Runtime.
    ort_compare.run_fusor(FUSOR, model, tmp_path / "inputs", tmp_path / "fusor")
    assert ort_compare.compare(tmp_path / "fusor", expected)

    # The profile lists what was fused and why the look-alikes were not.
    report = tmp_path / "profile.json"
    r = run_fusor("profile", model, "--batch", 2, "--seq", 4, "--runs", 1, "--warmup", 0, "--quick",
                  "--json", report)
    assert r.returncode == 0, r.stderr
    p = json.loads(report.read_text())
    item_kinds = collections.Counter(i["kind"] for i in p["fusion_items"])
    assert {k for k in item_kinds if k in PATTERN_KINDS} == ({kind} if kind else set()), item_kinds
    if declined:
        pass_name, fragment = declined
        reasons = [d["reason"] for d in p["not_fused"] if d["pass"] == pass_name]
        assert any(fragment in why for why in reasons), p["not_fused"]

    # The optimized model has the fused function only for the real pattern and runs the same in
    # fusor and in ONNX Runtime.
    out = tmp_path / "opt.onnx"
    r = run_fusor("optimize", model, "--batch", 2, "--seq", 4, "-o", out)
    assert r.returncode == 0, r.stderr
    kinds = fused_kinds(out)
    assert {k for k in kinds if k in PATTERN_KINDS} == ({kind} if kind else set()), kinds
    if kind:
        assert kinds[kind] == 1
    if declined:
        assert f"declined {declined[0]}" in r.stdout and declined[1] in r.stdout, r.stdout
    ort_compare.run_fusor(FUSOR, out, tmp_path / "inputs", tmp_path / "fusor-opt")
    assert ort_compare.compare(tmp_path / "fusor-opt", expected)
    assert ort_compare.compare(ort_compare.run_ort(out, inputs, level="disabled"), expected)


@pytest.mark.parametrize("operand", ["gamma", "beta"])
def test_a_layer_norm_affine_operand_that_broadcasts_the_output_is_not_fused_into_it(operand, tmp_path):
    """x [2, 3, 1, 4] normalized over its last two axes ([1, 4]) and scaled by a [4, 1] gamma (or
    shifted by such a beta): the right number of elements, but broadcasting makes the output
    [2, 3, 4, 4]. The fused LayerNorm applied it element by element: off by 2.7."""
    rng = np.random.default_rng(3)
    n = helper.make_node
    affine = {"gamma": (1 + 0.5 * rng.standard_normal((4, 1)), 0.1 * rng.standard_normal(4)),
              "beta": (1 + 0.5 * rng.standard_normal(4), 0.5 * rng.standard_normal((4, 1)))}[operand]
    nodes = [
        n("ReduceMean", ["x"], ["mean"], axes=[2, 3], keepdims=1),
        n("Sub", ["x", "mean"], ["c"]),
        n("Pow", ["c", "exp"], ["sq"]),
        n("ReduceMean", ["sq"], ["var"], axes=[2, 3], keepdims=1),
        n("Add", ["var", "eps"], ["ve"]),
        n("Sqrt", ["ve"], ["sd"]),
        n("Div", ["c", "sd"], ["normed"]),
        n("Mul", ["normed", "gamma"], ["scaled"]),
        n("Add", ["scaled", "beta"], ["y"]),
    ]
    g = helper.make_graph(nodes, "ln_affine", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          initializer=[const("exp", 2.0), const("eps", 1e-5), const("gamma", affine[0]),
                                       const("beta", affine[1])])
    model = tmp_path / "ln.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)]), model)
    inputs = {"x": rng.standard_normal((2, 3, 1, 4)).astype(np.float32)}
    ort_compare.save_npy_dir(tmp_path / "inputs", inputs)
    expected = ort_compare.run_ort(model, inputs, level="disabled")
    ort_compare.run_fusor(FUSOR, model, tmp_path / "inputs", tmp_path / "fusor")
    assert ort_compare.compare(tmp_path / "fusor", expected)
