"""Tests of the installed fusor package (make test-python: a fresh venv, pip install ., pytest).

They compare with ONNX Runtime, installed in the same venv, on the models of scripts/get-models."""
import os
import pathlib
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MODELS = pathlib.Path(os.environ.get("FUSOR_MODELS", ROOT / "models"))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))  # ort_compare: deterministic inputs, compare()


def model_path(name):
    path = MODELS / name / "model.onnx"
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/get-models (make test does)")
    return path


@pytest.fixture(scope="session")
def minilm():
    return model_path("minilm-l6")


@pytest.fixture(scope="session")
def resnet18():
    return model_path("resnet18")


def minilm_feed(batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, 30522, size=(batch, seq), dtype=np.int64),
            "attention_mask": np.ones((batch, seq), dtype=np.int64),
            "token_type_ids": np.zeros((batch, seq), dtype=np.int64)}


def ort_outputs(model, feed):
    import onnxruntime
    s = onnxruntime.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return s.run(None, feed)


def assert_close(actual, expected, atol=1e-4, rtol=1e-4):
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, atol=atol, rtol=rtol)


@pytest.fixture
def tiny_model(tmp_path):
    """A small float model with a fusable chain: y = relu(x @ W + b) * 2 + 1, x [batch, 16]."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "W")
    b = numpy_helper.from_array(rng.standard_normal(8).astype(np.float32), "b")
    two = numpy_helper.from_array(np.array(2, dtype=np.float32), "two")
    one = numpy_helper.from_array(np.array(1, dtype=np.float32), "one")
    nodes = [helper.make_node("MatMul", ["x", "W"], ["xw"], name="mm"),
             helper.make_node("Add", ["xw", "b"], ["xwb"], name="bias"),
             helper.make_node("Relu", ["xwb"], ["r"], name="relu"),
             helper.make_node("Mul", ["r", "two"], ["r2"], name="scale"),
             helper.make_node("Add", ["r2", "one"], ["y"], name="shift")]
    graph = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [w, b, two, one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)], producer_name="fusor-tests",
                              doc_string="tiny test model")
    model.graph.doc_string = "the graph"
    helper.set_model_props(model, {"purpose": "tests"})
    path = tmp_path / "tiny" / "model.onnx"
    path.parent.mkdir()
    onnx.save(model, str(path))
    return path
