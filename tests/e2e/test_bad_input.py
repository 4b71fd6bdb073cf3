"""Bad input gets a one-line error and exit 1: never a crash, a hang or a traceback."""
import numpy as np
import pytest
import onnx
from onnx import TensorProto, helper

from conftest import run_fusor


def add_model(tmp_path, op="Add", domain="", opset=17):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    node = helper.make_node(op, ["x", "x"], ["y"], name="the_node", domain=domain)
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=imports)
    path = tmp_path / "model.onnx"
    onnx.save(model, path)
    return path


def assert_one_line_error(result, *fragments):
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("fusor: error: "), lines[0]
    for f in fragments:
        assert f in lines[0], (f, lines[0])


def test_missing_path(tmp_path):
    assert_one_line_error(run_fusor("run", tmp_path / "nope.onnx"), "not found")


def test_empty_file(tmp_path):
    p = tmp_path / "empty.onnx"
    p.write_bytes(b"")
    assert_one_line_error(run_fusor("run", p), "empty")
    # inspect parsed zero bytes as an empty model and printed "every op is supported" first.
    r = run_fusor("inspect", p)
    assert_one_line_error(r, "model file is empty")
    assert r.stdout == ""


def test_garbage_file(tmp_path):
    p = tmp_path / "garbage.onnx"
    p.write_bytes(np.random.default_rng(0).bytes(4096))
    assert_one_line_error(run_fusor("run", p))


def test_truncated_file(tmp_path):
    good = add_model(tmp_path).read_bytes()
    p = tmp_path / "truncated.onnx"
    p.write_bytes(good[: len(good) // 2])
    assert_one_line_error(run_fusor("run", p))


def test_unknown_op_names_node_op_domain_and_opset(tmp_path):
    p = add_model(tmp_path, op="FrobnicateMore")
    assert_one_line_error(run_fusor("run", p), "the_node", "FrobnicateMore", "ai.onnx", "opset 17")


def test_unknown_domain(tmp_path):
    p = add_model(tmp_path, op="Add", domain="com.example")
    assert_one_line_error(run_fusor("run", p), "the_node", "com.example")


def test_wrong_input_name(tmp_path):
    p = add_model(tmp_path)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((2, 4), np.float32))
    assert_one_line_error(run_fusor("run", p, "--input", f"nosuch={npy}"), "nosuch")


def test_wrong_dtype_npy(tmp_path):
    p = add_model(tmp_path)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((2, 4), np.int64))
    assert_one_line_error(run_fusor("run", p, "--input", f"x={npy}"), "float32", "int64")


def test_wrong_rank(tmp_path):
    p = add_model(tmp_path)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((2, 4, 1), np.float32))
    assert_one_line_error(run_fusor("run", p, "--input", f"x={npy}"), "rank")


def test_wrong_static_dim(tmp_path):
    p = add_model(tmp_path)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((2, 5), np.float32))
    assert_one_line_error(run_fusor("run", p, "--input", f"x={npy}"), "[2, 5]")


def test_unsupported_npy_dtype(tmp_path):
    p = add_model(tmp_path)
    npy = tmp_path / "x.npy"
    np.save(npy, np.zeros((2, 4), np.complex64))
    assert_one_line_error(run_fusor("run", p, "--input", f"x={npy}"), "not supported")


def test_corrupt_npy(tmp_path):
    p = add_model(tmp_path)
    npy = tmp_path / "x.npy"
    npy.write_bytes(b"\x93NUMPY\x01\x00garbage")
    assert_one_line_error(run_fusor("run", p, "--input", f"x={npy}"))


def test_bad_shape_option(tmp_path):
    p = add_model(tmp_path)
    assert_one_line_error(run_fusor("run", p, "--shape", "x=2,banana"), "--shape")


def test_good_model_runs(tmp_path):
    p = add_model(tmp_path)
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    np.save(tmp_path / "x.npy", x)
    r = run_fusor("run", p, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"), x + x)


@pytest.mark.parametrize("command", ["run", "inspect", "profile", "optimize", "check", "bench"])
def test_a_model_folder_is_read_as_its_model_onnx(tmp_path, command):
    """Every command takes a folder holding model.onnx, as serve, generate and tune do (run and
    the others answered 'model path is a directory'); a folder without one names what is missing."""
    folder = tmp_path / "m"
    folder.mkdir()
    add_model(folder)
    extra = {"optimize": ["-o", tmp_path / "fused.onnx"], "bench": ["--batch", "1", "--seconds", "0.05"],
             "profile": ["--runs", "1"]}
    r = run_fusor(command, folder, *extra.get(command, []))
    assert r.returncode == 0, r.stderr
    (tmp_path / "empty").mkdir()
    assert_one_line_error(run_fusor(command, tmp_path / "empty", *extra.get(command, [])), "holds no model.onnx")


def test_outputs_whose_names_map_to_one_file_get_a_file_each(tmp_path):
    """DIR/<output name>.npy: the output named a_b keeps a_b.npy; a/b, made a_b, gets a number."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a/b", "a_b")]
    nodes = [helper.make_node("Neg", ["x"], ["a/b"]), helper.make_node("Abs", ["x"], ["a_b"])]
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], outs),
                                opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "m.onnx")
    np.save(tmp_path / "x.npy", np.array([-1.5, 2.0], np.float32))
    r = run_fusor("run", tmp_path / "m.onnx", "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "a_b.npy"), [1.5, 2.0])
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "a_b_2.npy"), [1.5, -2.0])


def test_an_output_folder_that_is_a_file(tmp_path):
    p = add_model(tmp_path)
    (tmp_path / "afile").write_text("")
    assert_one_line_error(run_fusor("run", p, "--output-dir", tmp_path / "afile"), "cannot create the output folder")


def test_a_shape_past_int64_is_an_error_not_an_empty_output(tmp_path):
    """2^62 x 4 elements wrapped to 0: fusor run wrote a header-only .npy for the shape and exited 0."""
    p = add_model(tmp_path)
    assert_one_line_error(run_fusor("run", p, "--batch", 2 ** 62, "--output-dir", tmp_path / "out"),
                          "has too many elements")
    assert not (tmp_path / "out" / "y.npy").exists()


@pytest.mark.parametrize("command, flag", [("check", "--report"), ("check", "--junit"), ("bench", "--json"),
                                           ("profile", "--json"), ("inspect", "--json")])
def test_an_output_file_in_a_missing_folder_fails_before_any_work(tmp_path, command, flag):
    r = run_fusor(command, add_model(tmp_path), flag, tmp_path / "nodir" / "out.json")
    assert r.returncode == 2 and f"{flag}: folder" in r.stderr and "does not exist" in r.stderr, r.stderr


def test_generated_inputs_take_the_dims_a_given_input_names(tmp_path):
    """`fusor run MODEL --input input_ids=ids.npy` (its documented 'others are generated')
    generated the mask at the default length and failed to broadcast deep in the graph; two
    given inputs that disagree on a shared dim now fail in one line naming it."""
    from conftest import model_path
    ids = tmp_path / "ids.npy"
    np.save(ids, np.array([[101, 2023, 2003, 102] * 4] * 2, np.int64))  # [2, 16]
    r = run_fusor("run", model_path("minilm-l6"), "--input", f"input_ids={ids}", "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    assert np.load(tmp_path / "out" / "last_hidden_state.npy").shape == (2, 16, 384)
    r = run_fusor("run", model_path("minilm-l6"), "--shape", "input_ids=2,8", "--shape", "attention_mask=2,9")
    assert_one_line_error(r, "give the model's dim 'sequence' as 8 and 9")
    # --shape for an input given from a file was dropped without a word.
    r = run_fusor("run", model_path("minilm-l6"), "--input", f"input_ids={ids}", "--shape", "input_ids=2,8")
    assert_one_line_error(r, "--shape input_ids=[2, 8] disagrees with its --input file's [2, 16]")


def test_inputs_past_the_machines_memory_are_a_clean_error():
    """`--seq 2147483647` filled three 16 GB inputs on a 23 GB machine: killed (137)."""
    from conftest import model_path
    r = run_fusor("run", model_path("minilm-l6"), "--batch", 1024, "--seq", 2147483647, timeout=120)  # 48 TB
    assert_one_line_error(r, "out of memory", "more than this machine's")


@pytest.mark.parametrize("rows", [1 << 61, 1 << 62])
def test_a_shape_whose_bytes_wrap_around_is_an_error_not_a_crash(tmp_path, rows):
    """Expand to 2^62 float32 elements is 2^64 bytes: the memory planner's size wrapped to 0 and
    the kernel wrote past a 0-byte buffer (SIGSEGV). 2^61 elements fit, but with a second output
    of the same size the arena's sum wrapped."""
    g = helper.make_graph([helper.make_node("Expand", ["x", "shape"], ["y"]), helper.make_node("Relu", ["y"], ["z"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1]),
                           helper.make_tensor_value_info("shape", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, None)])
    p = tmp_path / "expand.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), p)
    np.save(tmp_path / "x.npy", np.ones(1, np.float32))
    np.save(tmp_path / "shape.npy", np.array([rows], np.int64))
    r = run_fusor("run", p, "--input", f"x={tmp_path / 'x.npy'}", "--input", f"shape={tmp_path / 'shape.npy'}",
                  "--output-dir", tmp_path / "out")
    assert_one_line_error(r, "out of memory", str(rows))


def test_an_output_past_the_machines_memory_fails_before_its_kernel_is_built(tmp_path):
    """Resize builds its taps per output element at plan time: an output of 768 GB from a
    16-byte input grew the process to 16 GB before anything checked the size."""
    from onnx import numpy_helper
    g = helper.make_graph([helper.make_node("Resize", ["x", "", "scales"], ["y"], mode="nearest")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(np.array([1, 1, 3e5, 3e5], np.float32), "scales")])
    p = tmp_path / "resize.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), p)
    np.save(tmp_path / "x.npy", np.ones((1, 1, 2, 2), np.float32))
    r = run_fusor("run", p, "--input", f"x={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out", timeout=60)
    assert_one_line_error(r, "out of memory", "Resize", "[1, 1, 600000, 600000]")


def test_a_model_that_crashed_onnxs_shape_inference_is_refused_not_a_crash():
    """The importer fuzzer's input: a model whose op names ask for ONNX's shape inference (run for
    contrib ops that need ranks) and whose ConvTranspose weight is declared with rank 1 too:
    libonnx's inference read past the dims and the process died with SIGSEGV. It runs in a child
    process now, and the import refuses the model."""
    from pathlib import Path
    model = Path(__file__).resolve().parent.parent / "fuzz" / "regressions" / "onnx-convtranspose-shape-inference-segv.onnx"
    import subprocess
    from conftest import FUSOR
    r = subprocess.run([FUSOR, "run", model], capture_output=True, timeout=60)  # its op names are not UTF-8
    assert r.returncode == 1 and r.stderr.startswith(b"fusor: error: ") and b"unsupported operators" in r.stderr, r
