"""KServe has no datatype for float8, int4, int2 or the MX types: a model that takes or returns
them is refused at start, naming the tensor. fusor serve started and answered infer with a JSON
body whose output had no data (`"data":,`) and an empty datatype."""
import onnx
import pytest
from onnx import TensorProto as T, helper as h

from test_serve_names import serve_fails


@pytest.mark.parametrize("to,shown", [(T.FLOAT8E4M3FN, "float8e4m3fn"), (T.INT4, "int4"), (T.FLOAT4E2M1, "float4e2m1")])
def test_an_output_kserve_cannot_carry_is_refused_at_start(tmp_path, to, shown):
    graph = h.make_graph([h.make_node("Cast", ["X"], ["Y"], to=to)], "narrow", [h.make_tensor_value_info("X", T.FLOAT, ["N", 4])],
                         [h.make_tensor_value_info("Y", to, ["N", 4])])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 23)], ir_version=11), tmp_path / "narrow.onnx")
    code, last = serve_fails([("narrow", tmp_path / "narrow.onnx")])
    assert code != 0 and last == f"fusor: error: model narrow: output 'Y' is {shown}, which has no KServe datatype", last
