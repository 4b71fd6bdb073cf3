"""ONNX's own ops of opsets 23 and 24 that fusor expands at import (src/onnx/onnx_function_ops.h),
in the cases the node tests leave out, each as a one-node model against ONNX Runtime in both
fusor executors: a float mask that hides a whole row with -inf, and inputs whose every dim is
symbolic (the head size known only at run time)."""
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from test_contrib_ops import check, one_node, rand, run_ort, save_inputs, typed_outputs

B, H, S, D = 2, 4, 5, 8


def symbolic(model_feeds):
    """Every dim of every input named instead of fixed."""
    model, feeds = model_feeds
    for vi in model.graph.input:
        dims = [f"{vi.name}_{i}" for i in range(len(feeds[vi.name].shape))]
        vi.CopyFrom(helper.make_tensor_value_info(vi.name, TensorProto.FLOAT, dims))
    return model, feeds


def attention(mask=None, **attrs):
    feeds = {"Q": rand(B, H, S, D), "K": rand(B, H, S + 1, D), "V": rand(B, H, S + 1, D)}
    inputs = ["Q", "K", "V"]
    if mask is not None:
        feeds["M"] = mask
        inputs.append("M")
    return one_node("Attention", inputs, ["Y"], feeds, domain="", opset=23, **attrs)


def inf_row_mask():
    m = rand(S, S + 1)
    m[2] = -np.inf  # query 2 sees no key: a row of zeros, not NaN
    return m


CASES = {
    "Attention-float-mask-hides-a-row": lambda: attention(inf_row_mask()),
    "Attention-float-mask-hides-a-row-causal": lambda: attention(inf_row_mask(), is_causal=1),
    "Attention-symbolic-dims": lambda: symbolic(attention()),
    "Attention-symbolic-dims-float-mask": lambda: symbolic(attention(rand(S, S + 1))),
}


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("name", list(CASES))
def test_op_matches_onnx_runtime(name, executor, tmp_path):
    model, feeds = CASES[name]()
    expected = run_ort(model, feeds)
    assert not any(np.isnan(a).any() for a in expected.values())
    onnx.save(typed_outputs(model, expected), tmp_path / "model.onnx")
    save_inputs(tmp_path / "inputs", feeds)
    check(tmp_path / "model.onnx", tmp_path / "inputs", expected, executor, tmp_path / "out")
