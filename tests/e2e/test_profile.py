"""fusor profile: JSON report, Chrome trace, cost model totals and bad input.

Ceilings are measured in --quick mode into a cache under tmp (FUSOR_CACHE_DIR), once per module."""
import json

import onnx
import pytest
from onnx import numpy_helper

from conftest import model_path, run_fusor

KEYS = {"model", "batch", "seq", "nodes_in_model", "kernels_per_inference", "kernels", "ops", "not_fused",
        "ceilings", "model_flops", "throughput_per_s", "compute_efficiency", "memory"}
ROW_KEYS = {"name", "op", "calls", "time_ms", "bytes", "flops", "gbps", "gflops", "bound"}


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    d = tmp_path_factory.mktemp("fusor-cache")
    mp.setenv("FUSOR_CACHE_DIR", str(d))
    yield d
    mp.undo()


def profile(tmp_path, model, *extra, runs=3):
    report, trace = tmp_path / "profile.json", tmp_path / "trace.json"
    r = run_fusor("profile", model_path(model), "--runs", runs, "--warmup", 1, "--quick", "--json", report,
                  "--trace", trace, *extra, timeout=300)
    assert r.returncode == 0, r.stderr
    return r, json.loads(report.read_text()), json.loads(trace.read_text())


def check_report(p, trace, runs):
    assert KEYS <= p.keys(), KEYS - p.keys()
    for item in p["fusion_items"]:
        assert {"name", "kind", "pass", "nodes", "bytes_saved"} <= item.keys() and item["nodes"]
    for declined in p["not_fused"]:
        assert {"pass", "nodes", "reason"} <= declined.keys() and declined["reason"]
    assert p["kernels_per_inference"] <= p["kernels_per_inference_unfused"]
    assert p["ceilings"]["copy_gbps"] > 0 and p["ceilings"]["sgemm_gflops"] > 0
    for m in ("arena_bytes", "lower_bound_bytes", "naive_bytes", "weights_bytes"):
        assert p["memory"][m] > 0, m
    for rows in (p["kernels"], p["ops"]):
        for row in rows:
            assert ROW_KEYS <= row.keys(), ROW_KEYS - row.keys()
            assert row["bound"] in ("memory", "compute")
            assert row["time_ms"] >= 0 and row["bytes"] >= 0 and row["flops"] >= 0
        assert sum(r["calls"] for r in rows) == p["kernels_per_inference"]
        # Medians of per-kernel sums vs the median of the per-run total: close, not equal.
        total = sum(r["time_ms"] for r in rows)
        assert 0.5 * p["steps_ms"] <= total <= 1.5 * p["steps_ms"], (total, p["steps_ms"])
    assert 0 < p["steps_ms"] <= 1.1 * p["latency_ms"]
    assert p["model_flops"] == pytest.approx(sum(r["flops"] for r in p["kernels"]))
    assert p["compute_efficiency"] == pytest.approx(
        p["model_flops"] * p["throughput_per_s"] / p["batch"] / (p["ceilings"]["sgemm_gflops"] * 1e9), rel=1e-6)

    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == p["kernels_per_inference"] * runs
    kernel_names = {k["name"] for k in p["kernels"]}
    for e in events:
        assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert e["name"] in kernel_names
        assert e["dur"] >= 0 and e["ts"] >= 0
        assert {"op", "node", "shapes"} <= e["args"].keys()
    ts = [e["ts"] for e in events]
    assert ts == sorted(ts), "events of one thread come in time order"


def minilm_matmul_flops(batch, seq):
    """2*M*K*N summed: projections against [K, N] weights, plus QK^T and AV per layer."""
    model = onnx.load(model_path("minilm-l6"))
    weights = {i.name: numpy_helper.to_array(i).shape for i in model.graph.initializer}
    flops, hidden, attention = 0, None, 0
    for n in model.graph.node:
        if n.op_type != "MatMul":
            continue
        if n.input[1] in weights:
            k, n_out = weights[n.input[1]]
            flops += 2 * batch * seq * k * n_out
            hidden = hidden or k
        else:
            attention += 1  # [B, heads, S, d] x [B, heads, d, S] or [B, heads, S, S] x [B, heads, S, d]
    assert attention == 12 and hidden == 384
    return flops + attention * 2 * batch * seq * seq * hidden


def test_minilm_profile(tmp_path):
    r, p, trace = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 16, "--no-fusion")
    check_report(p, trace, runs=3)
    assert (p["batch"], p["seq"], p["nodes_in_model"]) == (1, 16, 689)
    matmul = next(o for o in p["ops"] if o["name"] == "MatMul")
    assert matmul["flops"] == minilm_matmul_flops(1, 16)
    assert matmul["calls"] == 48
    assert p["fusion_items"] == [] and p["kernels_per_inference"] == p["kernels_per_inference_unfused"]
    assert "Top kernels" in r.stdout and "Per op type" in r.stdout and "compute efficiency" in r.stdout


def test_minilm_fused_profile_keeps_the_work_and_lists_items(tmp_path):
    _, unfused, _ = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 16, "--no-fusion", runs=1)
    r, p, trace = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 16, runs=1)
    check_report(p, trace, runs=1)
    assert p["kernels_per_inference_unfused"] == unfused["kernels_per_inference"]
    assert p["kernels_per_inference"] < unfused["kernels_per_inference"]
    # A fused kernel is costed as its body: fusion removes traffic, not arithmetic.
    assert p["model_flops"] == pytest.approx(unfused["model_flops"], rel=1e-9)
    assert p["model_bytes"] < unfused["model_bytes"]
    kinds = [i["kind"] for i in p["fusion_items"]]
    assert kinds.count("LayerNorm") == 13 and kinds.count("Gelu") >= 0
    names = [i["name"] for i in p["fusion_items"]]
    assert len(names) == len(set(names)), "item names are unique"
    assert "layer0.attention.output.layernorm" in names and "embeddings.layernorm" in names
    assert "fusion items" in r.stdout and "not fused" in r.stdout


def test_minilm_batch_scales_flops_and_by_shape(tmp_path):
    _, p, _ = profile(tmp_path, "minilm-l6", "--batch", 2, "--seq", 8, "--by-shape", "--no-fusion", runs=1)
    matmul = next(o for o in p["ops"] if o["name"] == "MatMul")
    assert matmul["flops"] == minilm_matmul_flops(2, 8)
    # --by-shape splits kernel rows by shapes; the totals stay the same.
    assert all("->" in k["name"] for k in p["kernels"])
    assert sum(k["flops"] for k in p["kernels"] if k["op"] == "MatMul") == matmul["flops"]


def test_resnet18_profile(tmp_path):
    _, p, trace = profile(tmp_path, "resnet18", "--batch", 1, "--no-fusion", runs=2)
    check_report(p, trace, runs=2)
    ops = {o["name"]: o for o in p["ops"]}
    assert ops["Conv"]["calls"] == 20
    # Conv: 2 * (C/group * kh * kw) per output element + bias; ResNet-18 is ~1.82 GMAC.
    assert 3.5e9 < ops["Conv"]["flops"] < 3.75e9
    assert ops["Gemm"]["flops"] == 2 * 512 * 1000 + 1000
    assert ops["Conv"]["bound"] == "compute"


def test_ceilings_are_cached_and_remeasured(tmp_path, cache_dir):
    _, first, _ = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 8, runs=1)
    assert (cache_dir / "ceilings.json").exists()
    _, second, _ = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 8, runs=1)
    assert second["ceilings"]["cached"] is True
    assert second["ceilings"]["sgemm_gflops"] == first["ceilings"]["sgemm_gflops"] or not first["ceilings"]["cached"]
    r, third, _ = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 8, "--remeasure", runs=1)
    assert third["ceilings"]["cached"] is False
    assert "measuring sgemm" in r.stderr
    entries = json.loads((cache_dir / "ceilings.json").read_text())
    assert any(k.endswith("|quick") for k in entries)


def assert_one_line_error(r, *fragments):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fusor: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.parametrize("args,fragments", [
    (["--batch", "0"], ["--batch"]),
    (["--batch", "abc"], ["--batch"]),
    (["--seq", "-3"], ["--seq"]),
    (["--runs", "0"], ["--runs"]),
    (["--trace", "/nonexistent-dir/trace.json"], ["trace", "/nonexistent-dir/trace.json"]),
    (["--json", "/nonexistent-dir/p.json"], ["JSON"]),
])
def test_bad_arguments(args, fragments):
    assert_one_line_error(run_fusor("profile", model_path("minilm-l6"), "--quick", *args), *fragments)


def test_bad_model_path(tmp_path):
    assert_one_line_error(run_fusor("profile", tmp_path / "nope.onnx", "--quick"), "not found")
