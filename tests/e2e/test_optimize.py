"""fusor optimize: the written model holds fused items as functions in domain "fusor", keeps
symbolic input dims, and computes the original's outputs in fusor and in ONNX Runtime (which
inlines the functions), also at a batch and length other than the ones it was fused for."""
import collections
import os
import re
import shutil
import stat

import onnx
import pytest

import ort_compare
from conftest import FUSOR, model_path, run_fusor


def fused_calls(model, nested=False):
    """[(kind, name)] of the fused-node calls in the main graph (and in function bodies: nested)."""
    functions = {f.name: f for f in model.functions}
    calls = []

    def visit(nodes):
        for n in nodes:
            if n.domain == "fusor":
                kind = [a.s.decode() for a in n.attribute if a.name == "fusor_kind"]
                assert kind, f"fused node {n.name} has no fusor_kind"
                calls.append((kind[0], n.name))
                if nested:
                    visit(functions[n.op_type].node)

    visit(model.graph.node)
    return calls


def fused_kinds(model, nested=False):
    return collections.Counter(kind for kind, _ in fused_calls(model, nested))


def optimize(out, *extra):
    r = run_fusor("optimize", model_path("minilm-l6"), "--batch", 1, "--seq", 16, "-o", out, *extra)
    assert r.returncode == 0, r.stderr
    return out, r.stdout, r.stderr


@pytest.fixture(scope="module")
def optimized(tmp_path_factory):
    """With every pass on (the default config)."""
    return optimize(tmp_path_factory.mktemp("optimize") / "minilm-opt.onnx")


@pytest.fixture(scope="module")
def shape_generic(tmp_path_factory):
    """With the attention pass off: it freezes reshape targets for the bound dims."""
    d = tmp_path_factory.mktemp("optimize-generic")
    config = d / "config.yaml"
    config.write_text("fusion:\n  fuse_attention: false\n")
    return optimize(d / "minilm-opt.onnx", "--config", config)


def input_dims(model):
    return {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}


def test_summary_and_structure(optimized):
    path, stdout, _ = optimized
    m = re.search(r"(\d+) nodes -> (\d+), (\d+) items fused", stdout)
    assert m, stdout
    before, after, items = map(int, m.groups())
    assert items > 0 and after < before
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert model.ir_version >= 8
    assert {(o.domain, o.version) for o in model.opset_import} >= {("fusor", 1)}
    # 13 LayerNorms: one after the embeddings, two per layer (other kinds vary with the passes).
    assert fused_kinds(model, nested=True)["LayerNorm"] == 13, fused_kinds(model, nested=True)
    assert len(model.graph.node) == after
    # Every fused node calls its own function, whose body has the item's nodes.
    functions = {f.name: f for f in model.functions}
    for n in model.graph.node:
        if n.domain == "fusor":
            f = functions[n.op_type]
            assert f.domain == "fusor" and len(f.node) > 1 and len(f.input) == len(n.input)
    # Item names printed one per line are the fused nodes' names (items inside items included).
    printed = set(re.findall(r"^  fused \w+ (\S+) \(", stdout, re.M))
    assert printed == {name for _, name in fused_calls(model, nested=True)}


def test_symbolic_input_dims_survive(shape_generic):
    path, stdout, stderr = shape_generic
    assert "(symbolic input dims)" in stdout and "warning" not in stderr
    source = onnx.load(str(model_path("minilm-l6")), load_external_data=False)
    inits = {t.name for t in source.graph.initializer}
    assert input_dims(onnx.load(str(path))) == {k: v for k, v in input_dims(source).items() if k not in inits}


def test_fully_fused_model_keeps_symbolic_dims(optimized):
    """Attention's reshape targets stay symbolic (their shape subgraphs join the fused body), so
    the default, fully fused file runs at any batch and length."""
    path, stdout, stderr = optimized
    dims = input_dims(onnx.load(str(path)))
    assert "(symbolic input dims)" in stdout and "warning" not in stderr
    assert "Attention 6" in stdout
    assert all(isinstance(d[0], str) for d in dims.values()), dims


def check_outputs(path, batch, seq, tmp_path):
    src = model_path("minilm-l6")
    inputs, expected = ort_compare.gen(src, batch, seq, tmp_path)
    # fusor runs the written model (fused nodes read back).
    ort_compare.run_fusor(FUSOR, path, tmp_path / "inputs", tmp_path / "fusor")
    assert ort_compare.compare(tmp_path / "fusor", expected)
    # ONNX Runtime inlines the functions and gets the same numbers.
    assert ort_compare.compare(ort_compare.run_ort(path, inputs), expected)


def test_outputs_match_the_original(optimized, tmp_path):
    check_outputs(optimized[0], 1, 16, tmp_path)


@pytest.mark.parametrize("batch,seq", [(1, 16), (3, 24)])
def test_shape_generic_model_runs_at_other_dims(shape_generic, batch, seq, tmp_path):
    """No fused node's attributes or inputs bake the batch or length it was fused for."""
    check_outputs(shape_generic[0], batch, seq, tmp_path)


def test_optimizing_an_optimized_model_keeps_its_items(optimized, tmp_path):
    path = optimized[0]
    again = tmp_path / "again.onnx"
    r = run_fusor("optimize", path, "--seq", 16, "-o", again)
    assert r.returncode == 0, r.stderr
    assert fused_kinds(onnx.load(str(again)), True) == fused_kinds(onnx.load(str(path)), True)


def test_the_gate_checks_an_optimized_model(optimized, tmp_path):
    """Its items' bodies are model-local functions with untyped inputs: running one for the gate
    failed with 'frozen input ... does not match its bound type'."""
    path = tmp_path / "minilm-opt.onnx"
    shutil.copyfile(optimized[0], path)  # the verdict is saved beside the model
    r = run_fusor("check", path, "--seq", 16, "--no-edge-cases", timeout=600)
    assert r.returncode == 0 and r.stdout.startswith("PASSED"), r.stdout + r.stderr
    assert " 0 rolled back" in r.stdout.splitlines()[0]


def test_no_fusion_writes_a_plain_model(tmp_path):
    out = tmp_path / "plain.onnx"
    r = run_fusor("optimize", model_path("minilm-l6"), "--no-fusion", "--seq", 8, "-o", out)
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    assert not fused_kinds(model) and not model.functions


def one_line_error(r, fragment):
    assert r.returncode == 1, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fusor: error: ") and fragment in lines[0], r.stderr


def test_bad_input(tmp_path):
    one_line_error(run_fusor("optimize", tmp_path / "missing.onnx", "-o", tmp_path / "o.onnx"), "not found")
    one_line_error(run_fusor("optimize", model_path("minilm-l6"), "-o", tmp_path / "no" / "dir" / "o.onnx"),
                   "does not exist")
    one_line_error(run_fusor("optimize", model_path("minilm-l6"), "-o", tmp_path), "is a directory")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    one_line_error(run_fusor("optimize", bad, "-o", tmp_path / "o.onnx"), "not a valid ONNX")
    r = run_fusor("optimize", model_path("minilm-l6"))  # no -o
    assert r.returncode != 0 and "--output" in r.stderr
    # The model was renamed over whatever the path held: as root, -o /dev/null made the device a
    # file holding the model. A FIFO stands in for it here.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    one_line_error(run_fusor("optimize", model_path("minilm-l6"), "--no-fusion", "-o", fifo), "not a regular file")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_long_output_name_is_written(tmp_path):
    """A 250-byte name: the temporary file beside it, 21 bytes longer, went past the file
    system's 255 and the write failed."""
    out = tmp_path / ("m" * 245 + ".onnx")
    r = run_fusor("optimize", model_path("minilm-l6"), "--no-fusion", "--seq", 8, "-o", out)
    assert r.returncode == 0, r.stderr
    onnx.load(str(out))


def test_the_models_metadata_props_are_kept(tmp_path):
    """ONNX Runtime's quantizer records its provenance in metadata_props (onnx.quant.pre_process);
    optimize dropped them."""
    source = model_path("resnet18-int8")
    out = tmp_path / "opt.onnx"
    r = run_fusor("optimize", source, "-o", out)
    assert r.returncode == 0, r.stderr
    props = lambda p: {m.key: m.value for m in onnx.load(p, load_external_data=False).metadata_props}
    assert props(source) and props(out) == props(source)
