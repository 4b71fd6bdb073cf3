"""Ops whose output shape is set by an input's value, given at run time: fusor plans such a model
per run (its inputs' values known), as it did for Reshape, Tile, Slice or Resize's sizes. Range's
start/limit/delta, OneHot's depth, Resize's scales and Loop's trip count were refused instead
("must be known when the plan is built"). Each model runs twice with other values, against
ONNX Runtime."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h

import ort_compare
from conftest import FUSOR


def model(nodes, inputs, opset, outputs=("y",)):
    graph = h.make_graph(nodes, "g", inputs, [h.make_tensor_value_info(o, T.FLOAT, None) for o in outputs])
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def loop_model():
    """y = x added to itself M times (M a graph input), and the count of steps."""
    body = h.make_graph([h.make_node("Identity", ["cond_in"], ["cond_out"]), h.make_node("Add", ["acc", "x"], ["acc_out"])],
                        "body", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("cond_in", T.BOOL, []),
                                 h.make_tensor_value_info("acc", T.FLOAT, [3])],
                        [h.make_tensor_value_info("cond_out", T.BOOL, []), h.make_tensor_value_info("acc_out", T.FLOAT, [3])])
    cond = onnx.numpy_helper.from_array(np.array(True), "cond")
    zero = onnx.numpy_helper.from_array(np.zeros(3, np.float32), "zero")
    g = h.make_graph([h.make_node("Loop", ["M", "cond", "zero"], ["y"], body=body)], "g",
                     [h.make_tensor_value_info("M", T.INT64, []), h.make_tensor_value_info("x", T.FLOAT, [3])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], [cond, zero])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
    m.ir_version = 8
    return m


f32 = lambda *v: np.array(v, np.float32)  # noqa: E731
CASES = {
    # a sequence mask: positions up to the longest length, compared with each length
    "range-from-reduce-max": (model([h.make_node("ReduceMax", ["lengths"], ["n"], keepdims=0),
                                     h.make_node("Range", ["zero", "n", "one"], ["r"]),
                                     h.make_node("Unsqueeze", ["lengths", "axis"], ["l"]),
                                     h.make_node("Less", ["r", "l"], ["mask"]),
                                     h.make_node("Cast", ["mask"], ["y"], to=T.FLOAT)],
                                    [h.make_tensor_value_info(n, t, s) for n, t, s in
                                     (("lengths", T.INT64, [3]), ("zero", T.INT64, []), ("one", T.INT64, []),
                                      ("axis", T.INT64, [1]))], 13),
                              [{"lengths": np.array([2, 5, 3]), "zero": np.array(0), "one": np.array(1), "axis": np.array([1])},
                               {"lengths": np.array([7, 1, 4]), "zero": np.array(0), "one": np.array(1), "axis": np.array([1])}]),
    "range-float": (model([h.make_node("Range", ["a", "b", "c"], ["y"])],
                          [h.make_tensor_value_info(n, T.FLOAT, []) for n in "abc"], 11),
                    [{"a": np.float32(1), "b": np.float32(4), "c": np.float32(0.5)},
                     {"a": np.float32(-2), "b": np.float32(3), "c": np.float32(1.5)}]),
    "onehot-depth": (model([h.make_node("OneHot", ["i", "d", "v"], ["y"])],
                           [h.make_tensor_value_info("i", T.INT64, [2]), h.make_tensor_value_info("d", T.INT64, []),
                            h.make_tensor_value_info("v", T.FLOAT, [2])], 11),
                     [{"i": np.array([0, 2]), "d": np.array(4), "v": f32(0, 1)},
                      {"i": np.array([1, -1]), "d": np.array(6), "v": f32(-1, 3)}]),
    "resize-scales": (model([h.make_node("Resize", ["x", "", "s"], ["y"], mode="linear")],
                            [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 2, 2]), h.make_tensor_value_info("s", T.FLOAT, [4])], 13),
                      [{"x": f32(1, 2, 3, 4).reshape(1, 1, 2, 2), "s": f32(1, 1, 2, 2)},
                       {"x": f32(1, 2, 3, 4).reshape(1, 1, 2, 2), "s": f32(1, 1, 3, 1.5)}]),
    "loop-trip-count": (loop_model(), [{"M": np.array(3), "x": f32(1, 2, 3)}, {"M": np.array(5), "x": f32(-1, 0, 0.5)}]),
}


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("name", list(CASES))
def test_a_shape_set_by_a_run_time_value_is_planned_per_run(name, executor, tmp_path):
    m, feeds_list = CASES[name]
    path = tmp_path / "model.onnx"
    onnx.save(m, path)
    for k, feeds in enumerate(feeds_list):
        feeds = {n: np.asarray(v) for n, v in feeds.items()}
        want = ort_compare.run_ort(path, feeds, threads=1)
        (tmp_path / f"in{k}").mkdir()
        for n, v in feeds.items():  # np.save keeps 0-d arrays 0-d (save_npy_dir makes them 1-d)
            np.save(tmp_path / f"in{k}" / f"{n}.npy", v)
        ort_compare.run_fusor(FUSOR, path, tmp_path / f"in{k}", tmp_path / f"out{k}",
                              ["--reference"] if executor == "reference" else [])
        got = ort_compare.load_npy_dir(tmp_path / f"out{k}", list(want))
        for out, a in want.items():
            assert got[out].shape == a.shape, (out, got[out].shape, a.shape)
            np.testing.assert_allclose(got[out], a, rtol=1e-5, atol=1e-6)
