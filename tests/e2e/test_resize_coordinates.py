"""Resize's source coordinates where they land exactly on a pixel or an output has one pixel,
against ONNX Runtime: rounding in double picked the neighbouring pixel for nearest with floor or
ceil, and pytorch_half_pixel's one-pixel output read -0.5 (onnx.reference's) where the spec and
ONNX Runtime read 0."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto as T, helper as h

import ort_compare
from conftest import FUSOR

CASES = {
    # sizes 31 -> 25: output 12 maps to (12.5) * 31 / 25 - 0.5 = 15 exactly; fusor read pixel 16
    "nearest-ceil-sizes": (dict(mode="nearest", coordinate_transformation_mode="pytorch_half_pixel",
                                nearest_mode="ceil"), 31, {"sizes": [1, 1, 1, 25]}),
    # scale 0.5 of 31: the symmetric offset is 0.5 exactly; fusor read pixel 0 where 1 is right
    "nearest-floor-symmetric": (dict(mode="nearest", coordinate_transformation_mode="half_pixel_symmetric",
                                     nearest_mode="floor"), 31, {"scales": [1, 1, 1, 0.5]}),
    "cubic-one-pixel": (dict(mode="cubic", coordinate_transformation_mode="pytorch_half_pixel"), 4,
                        {"sizes": [1, 1, 1, 1]}),
}


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("name", list(CASES))
def test_resize_coordinates_match_onnx_runtime(name, executor, tmp_path):
    attrs, width, target = CASES[name]
    inputs = ["x", "", "scales", ""] if "scales" in target else ["x", "", "", "sizes"]
    inits = [onnx.numpy_helper.from_array(np.array(v, np.float32 if k == "scales" else np.int64), k)
             for k, v in target.items()]
    g = h.make_graph([h.make_node("Resize", inputs, ["y"], **attrs)], "g",
                     [h.make_tensor_value_info("x", T.FLOAT, [1, 1, 1, width])],
                     [h.make_tensor_value_info("y", T.FLOAT, None)], inits)
    path = tmp_path / "resize.onnx"
    onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 19)]), path)
    x = {"x": np.arange(width, dtype=np.float32).reshape(1, 1, 1, width) ** 1.5}
    want = ort_compare.run_ort(path, x, threads=1)
    ort_compare.save_npy_dir(tmp_path / "in", x)
    ort_compare.run_fusor(FUSOR, path, tmp_path / "in", tmp_path / "out", ["--reference"] if executor == "reference" else [])
    got = ort_compare.load_npy_dir(tmp_path / "out", ["y"])["y"]
    np.testing.assert_allclose(got, want["y"], rtol=1e-5, atol=1e-5)
