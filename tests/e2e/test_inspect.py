"""fusor inspect: what a model is and whether fusor runs it, before running it."""
import json

import onnx
from onnx import TensorProto, helper

from conftest import model_path, run_fusor


def two_unsupported_model(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Frobnicate", ["a"], ["b"], name="frob_1"),
        helper.make_node("Frobnicate", ["b"], ["c"], name="frob_2"),
        helper.make_node("Gizmo", ["c"], ["y"], name="gizmo", domain="com.example"),
    ]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def test_resnet_inspection_counts_flops_parameters_and_fusion(tmp_path):
    out = tmp_path / "inspect.json"
    r = run_fusor("inspect", model_path("resnet18"), "--batch", "2", "--json", out)
    assert r.returncode == 0, r.stderr
    assert "every op is supported" in r.stdout
    j = json.loads(out.read_text())
    assert j["supported"] is True
    assert j["inputs"] == [{"name": "input", "dtype": "float32", "dims": ["batch", "3", "224", "224"]}]
    ops = {o["op_type"]: o["count"] for o in j["ops"]}
    assert ops["Conv"] == 20 and all(o["supported"] for o in j["ops"])
    assert 11_600_000 < j["parameters"] < 11_800_000  # ResNet-18: 11.69 M
    # 1.82 GMAC per image, 2 FLOPs each, batch 2
    assert 7.0e9 < j["flops"] < 7.6e9, j["flops"]
    assert j["bound_dims"] == {"input": [2, 3, 224, 224]}
    assert sum(f["kind"] == "FusedConv" for f in j["fusion_items"]) >= 16


def test_flops_scale_with_seq_for_a_transformer(tmp_path):
    flops = []
    for seq in (16, 64):
        out = tmp_path / f"s{seq}.json"
        r = run_fusor("inspect", model_path("minilm-l6"), "--seq", seq, "--json", out)
        assert r.returncode == 0, r.stderr
        flops.append(json.loads(out.read_text())["flops"])
    # GEMMs are linear in tokens, attention quadratic: between 4x and 16x for 4x the tokens
    assert 4.0 <= flops[1] / flops[0] < 16.0, flops


def test_unsupported_ops_are_all_listed_and_exit_1(tmp_path):
    path = two_unsupported_model(tmp_path)
    out = tmp_path / "inspect.json"
    r = run_fusor("inspect", path, "--json", out)
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "UNSUPPORTED" in r.stdout and "first at node 'frob_1'" in r.stdout
    j = json.loads(out.read_text())
    by_op = {o["op_type"]: o for o in j["ops"]}
    assert by_op["Frobnicate"]["count"] == 2 and not by_op["Frobnicate"]["supported"]
    assert by_op["Gizmo"]["domain"] == "com.example" and not by_op["Gizmo"]["supported"]
    assert by_op["Relu"]["supported"]
    assert "flops" not in j and j["not_planned"]


def test_a_model_that_does_not_plan_fails_the_gate(tmp_path):
    """Every op of it is supported, but its opset is past the ones fusor knows."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    model = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 30)])
    onnx.save(model, tmp_path / "model.onnx")
    r = run_fusor("inspect", tmp_path / "model.onnx")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "not planned" in r.stdout and "not planned at these dims" in r.stdout


def test_running_a_model_with_unsupported_ops_names_them_all_in_one_line(tmp_path):
    r = run_fusor("run", two_unsupported_model(tmp_path))
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "2 unsupported operators" in lines[0]
    assert "Frobnicate (ai.onnx opset 17, first at node 'frob_1')" in lines[0]
    assert "Gizmo (com.example opset 1, first at node 'gizmo')" in lines[0]


def test_bad_inspect_input_is_one_line(tmp_path):
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"\x08\x07not a model at all" * 40)
    for args in (["inspect", tmp_path / "missing.onnx"], ["inspect", garbage]):
        r = run_fusor(*args)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("fusor: error: "), r.stderr


def position_table_model(tmp_path, positions=6):
    """x [1, seq, 4] + a learned position table of `positions` rows, as CLIP's text encoder has 77."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 4])
    table = helper.make_tensor("positions", TensorProto.FLOAT, [1, positions, 4], [0.5] * positions * 4)
    graph = helper.make_graph([helper.make_node("Add", ["x", "positions"], ["y"])], "g", [x], [y], [table])
    path = tmp_path / "positions.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_model_that_cannot_take_the_default_length_says_to_give_one(tmp_path):
    path = position_table_model(tmp_path)
    for command in (("run", path, "--output-dir", tmp_path / "out"), ("optimize", path, "-o", tmp_path / "o.onnx")):
        r = run_fusor(*command)
        assert r.returncode == 1
        assert "cannot broadcast" in r.stderr and "--seq's default, 128: give --seq N" in r.stderr, r.stderr
    r = run_fusor("inspect", path)
    assert r.returncode == 1 and "--seq's default, 128" in r.stdout, r.stdout
    assert run_fusor("run", path, "--seq", "6", "--output-dir", tmp_path / "out").returncode == 0
    r = run_fusor("run", path, "--seq", "7", "--output-dir", tmp_path / "out")
    assert r.returncode == 1 and "default" not in r.stderr  # a length the user gave is not a default
    static = position_table_model(tmp_path, positions=3)  # [1, seq, 4] made [1, 5, 4]: no length to bind
    m = onnx.load(static)
    m.graph.input[0].type.tensor_type.shape.dim[1].dim_value = 5
    onnx.save(m, static)
    r = run_fusor("inspect", static)
    assert r.returncode == 1 and "cannot broadcast" in r.stdout and "--seq's default" not in r.stdout, r.stdout


def test_an_unimplemented_contrib_op_is_named_as_such_not_its_domain(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("QAttention", ["x"], ["y"], domain="com.microsoft")
    path = tmp_path / "m.onnx"
    onnx.save(helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[
        helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]), path)
    r = run_fusor("inspect", path)
    assert "QAttention" in r.stdout and "not a com.microsoft operator fusor implements" in r.stdout, r.stdout
    assert "domain 'com.microsoft' is not supported" not in r.stdout
