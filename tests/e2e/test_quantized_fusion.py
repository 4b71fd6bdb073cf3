"""QDQ fusion on the int8 ResNet-18 of scripts/quant_zoo.py (issue #19): every Conv unit runs on
the int8 kernel, the residual Adds and the MaxPool on bytes, the classifier's Gemm on the int8
matmul; the fused model stays within one
quantization step of ONNX Runtime (both optimization levels); the precision gate keeps every
item, and catches the int8 faults (a wrong zero point, a saturating product) and rolls them back.
"""
import json
import os
import shutil

import numpy as np
import pytest

import ort_compare
from conftest import FUSOR, model_path, run_fusor

MODEL = "resnet18-int8"


def output_step(model):
    """The scale of the DequantizeLinear that makes the model's output."""
    import onnx
    m = onnx.load(str(model))
    inits = {t.name: t for t in m.graph.initializer}
    out = m.graph.output[0].name
    dq = next(n for n in m.graph.node if n.op_type == "DequantizeLinear" and n.output[0] == out)
    return float(onnx.numpy_helper.to_array(inits[dq.input[1]]).max())


def has_vnni():
    """Whether oneDNN has VNNI here: without it u8 x s8 pair sums may saturate (int8_support.h)
    and the convolutions with weights that could saturate run as their QDQ bodies instead."""
    isa = os.environ.get("ONEDNN_MAX_CPU_ISA", "").upper()
    if isa and "VNNI" not in isa and "AMX" not in isa and isa != "ALL":
        return False
    flags = open("/proc/cpuinfo").read()
    return " avx512_vnni" in flags or " avx_vnni" in flags


needs_vnni = pytest.mark.skipif(not has_vnni(), reason="no VNNI: the int8 convolutions run as their QDQ bodies")


def test_every_qdq_unit_is_fused(tmp_path):
    report = tmp_path / "profile.json"
    r = run_fusor("profile", model_path(MODEL), "--batch", 1, "--runs", 2, "--warmup", 1, "--json", report)
    assert r.returncode == 0, r.stderr
    p = json.loads(report.read_text())
    kinds = [i["kind"] for i in p["fusion_items"]]
    assert kinds.count("QuantizedMaxPool") == 1, kinds
    if not has_vnni():
        declined = [n for n in p["not_fused"] if "VNNI" in n.get("reason", "")]
        assert kinds.count("QuantizedConv") + len(declined) >= 20, (kinds, p["not_fused"])
        pytest.skip("no VNNI: the int8 convolutions decline weights that could saturate vpmaddubsw")
    assert kinds.count("QuantizedConv") == 20 and kinds.count("QuantizedMatMul") == 1, kinds  # the classifier's Gemm
    assert kinds.count("Elementwise") >= 8, kinds  # the residual Adds, DQ and Q included
    ops = {k["op"] for k in p["kernels"]}
    assert not ops & {"Conv", "Add", "MaxPool", "Gemm"}, ops


@pytest.mark.parametrize("batch", [1, 2])
def test_fused_model_is_within_one_step_of_onnx_runtime(batch, tmp_path):
    model = model_path(MODEL)
    inputs = ort_compare.make_inputs(model, batch, 1)
    ort_compare.save_npy_dir(tmp_path / "in", inputs)
    ort_compare.run_fusor(FUSOR, model, tmp_path / "in", tmp_path / "out")
    got = next(iter(ort_compare.load_npy_dir(tmp_path / "out", None).values()))
    step = output_step(model)
    # ORT's optimized graph runs QLinearConv, whose uint8 x int8 products saturate without VNNI.
    for level in ("all", "disabled") if ort_compare.ort_u8s8_is_exact() else ("disabled",):
        want = ort_compare.run_ort(model, inputs, level=level)["output"]
        err = np.abs(got.astype(np.float64) - want)
        assert err.max() <= step * 1.0001, (level, err.max() / step)
        assert (got.argmax(1) == want.argmax(1)).all()


def private_copy(model, tmp_path):
    """The model copied under tmp_path: fusor check saves its verdict beside the model."""
    copy = tmp_path / model / "model.onnx"
    copy.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(model_path(model), copy)
    return copy


def check(tmp_path, *extra):
    report = tmp_path / "check.json"
    r = run_fusor("check", private_copy(MODEL, tmp_path), "--batch", 1, "--report", report, "--no-edge-cases", *extra,
                  timeout=600)
    return r, json.loads(report.read_text()) if report.exists() else None


@needs_vnni
def test_gate_keeps_every_unit_within_one_step(tmp_path):
    r, rep = check(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert rep["passed"] is True and rep["rolled_back"] == []
    convs = [i for i in rep["items"] if i["kind"] == "QuantizedConv"]
    assert len(convs) == 20 and all(i["status"] == "kept" and i["max_abs"] <= 1 for i in convs)
    assert any(i["max_abs"] == 1 for i in convs), "no tie flipped: the one-step allowance was never needed"
    pools = [i for i in rep["items"] if i["kind"] == "QuantizedMaxPool"]
    assert pools and all(i["max_abs"] == 0 for i in pools)  # a maximum of the integers is exact


@needs_vnni
@pytest.mark.parametrize("fault", ["wrong_zero_point", "saturating_product"])
def test_int8_faults_are_caught_and_rolled_back(fault, tmp_path):
    item = "layer2.layer2_0.conv1.qconv"
    r, rep = check(tmp_path, "--inject-fault", f"{fault}@{item}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert rep["passed"] is True and rep["rolled_back"] == [item] and rep["fault_injected_into"] == item
    bad = next(i for i in rep["items"] if i["name"] == item)
    assert bad["status"] == "rolled_back" and bad["tier"] == 1
    assert sum(i["status"] == "kept" for i in rep["items"]) >= 25


def test_gate_passes_a_dynamically_quantized_model_and_still_catches_faults(tmp_path):
    """MiniLM-int8 (quantize_dynamic): a one-ULP change upstream of a DynamicQuantizeLinear can
    rescale its whole tensor, so the model's outputs may miss native by whole steps while every
    fused item is within its rule. The gate then compares with native replayed on the fused run's
    quantization decisions, under the same strict tolerance; a wrong item is still rolled back."""
    report, model = tmp_path / "check.json", private_copy("minilm-l6-int8", tmp_path)
    r = run_fusor("check", model, "--batch", 1, "--seq", 16, "--report", report, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    rep = json.loads(report.read_text())
    assert rep["passed"] is True and rep["rolled_back"] == []
    kinds = [i["kind"] for i in rep["items"]]
    # Without VNNI oneDNN's int8 GEMM would saturate on these full-range weights: fusor declines
    # it, so there are no QuantizedMatMul items to gate (the integer MatMuls stay exact).
    quantized = 30 if has_vnni() else 0
    assert kinds.count("QuantizedMatMul") == quantized and all(i["status"] == "kept" for i in rep["items"])
    for o in rep["outputs"]:
        assert o["passed"]
        if not o["vs_native"]["within"]:  # a quantization decision went the other way: pinned, it must agree
            assert o["vs_native_pinned"]["within"], o
    item = "layer2.output.layernorm"
    r = run_fusor("check", model, "--batch", 1, "--seq", 16, "--no-edge-cases",
                  "--inject-fault", f"reduced_precision@{item}", "--report", report, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(report.read_text())["rolled_back"] == [item]
