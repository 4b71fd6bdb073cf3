"""A float16 model served over KServe: fusor computes it in float32 (the storage-types pass) and
answers in FP16, over HTTP JSON, HTTP binary data and gRPC raw contents."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from serve_util import Served

RNG = np.random.default_rng(7)
W = RNG.normal(size=(4, 3)).astype(np.float16)
B = RNG.normal(size=(3,)).astype(np.float16)


def float16_model(path):
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["sum"]),
         helper.make_node("Relu", ["sum"], ["y"])],
        "f16", [helper.make_tensor_value_info("x", TensorProto.FLOAT16, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, ["batch", 3])],
        [numpy_helper.from_array(W, "w"), numpy_helper.from_array(B, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def expected(x):
    # Each op's result rounds to float16, as the model's types say.
    mm = (x.astype(np.float32) @ W.astype(np.float32)).astype(np.float16)
    s = (mm.astype(np.float32) + B.astype(np.float32)).astype(np.float16)
    return np.maximum(s, np.float16(0))


def test_float16_model_over_http_json_binary_and_grpc(tmp_path):
    path = tmp_path / "f16.onnx"
    float16_model(path)
    s = Served(tmp_path, "", models=[("f16", path)])
    try:
        x = RNG.normal(size=(2, 4)).astype(np.float16)
        want = expected(x)
        http = httpclient.InferenceServerClient(s.url, connection_timeout=10, network_timeout=30)
        meta = http.get_model_metadata("f16")
        assert meta["inputs"][0]["datatype"] == "FP16" and meta["outputs"][0]["datatype"] == "FP16"
        for binary in (False, True):
            inp = httpclient.InferInput("x", list(x.shape), "FP16")
            inp.set_data_from_numpy(x, binary_data=binary)
            out = httpclient.InferRequestedOutput("y", binary_data=binary)
            got = http.infer("f16", [inp], outputs=[out], timeout=30).as_numpy("y")
            assert got.dtype == np.float16
            np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
        http.close()
        grpc = grpcclient.InferenceServerClient(s.grpc_url)
        inp = grpcclient.InferInput("x", list(x.shape), "FP16")
        inp.set_data_from_numpy(x)
        got = grpc.infer("f16", [inp], client_timeout=30).as_numpy("y")
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3, atol=2e-3)
        grpc.close()
    finally:
        assert s.stop() == 0, s.output()
