"""fusor profile: JSON report, Chrome trace, cost model totals and bad input.

Ceilings are measured in --quick mode into a cache under tmp (FUSOR_CACHE_DIR), once per module."""
import collections
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


def median(values):
    v = sorted(values)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def check_rows(rows, p, events, key):
    """Per-kernel or per-op rows: costs add up, rates follow from them, times come from the trace."""
    assert sum(r["calls"] for r in rows) == p["kernels_per_inference"]
    assert p["model_flops"] == pytest.approx(sum(r["flops"] for r in rows))
    assert p["model_bytes"] == pytest.approx(sum(r["bytes"] for r in rows))
    balance = p["ceilings"]["balance_flop_per_byte"]
    runs = sorted({e["args"]["run"] for e in events})
    for row in rows:
        assert ROW_KEYS <= row.keys(), ROW_KEYS - row.keys()
        name = row["name"]
        assert row["bytes"] == row["bytes_read"] + row["bytes_written"] and row["bytes_written"] > 0, name
        assert row["flops"] >= 0 and row["time_ms"] > 0, name
        seconds = row["time_ms"] / 1e3
        assert row["gbps"] == pytest.approx(row["bytes"] / seconds / 1e9, rel=1e-9), name
        assert row["gflops"] == pytest.approx(row["flops"] / seconds / 1e9, rel=1e-9), name
        assert row["intensity"] == pytest.approx(row["flops"] / row["bytes"], rel=1e-9), name
        assert row["bound"] == ("compute" if row["flops"] > 0 and row["intensity"] >= balance else "memory"), name
        assert row["share"] == pytest.approx(row["time_ms"] / p["steps_ms"], rel=1e-9), name
        # The row's time is the median over runs of the summed durations of its trace events.
        mine = [e for e in events if key(e) == name]
        assert len(mine) == row["calls"] * len(runs), name
        per_run = [sum(e["dur"] for e in mine if e["args"]["run"] == r) / 1e3 for r in runs]
        assert row["time_ms"] == pytest.approx(median(per_run), rel=1e-6, abs=1e-9), name


def check_report(p, trace, runs):
    assert KEYS <= p.keys(), KEYS - p.keys()
    for item in p["fusion_items"]:
        assert {"name", "kind", "pass", "nodes", "bytes_saved"} <= item.keys() and item["nodes"]
        assert item["bytes_saved"] > 0, item["name"]
    for declined in p["not_fused"]:
        assert {"pass", "nodes", "reason"} <= declined.keys() and declined["reason"]
    assert p["kernels_per_inference"] <= p["kernels_per_inference_unfused"]
    assert p["ceilings"]["copy_gbps"] > 0 and p["ceilings"]["sgemm_gflops"] > 0
    assert p["ceilings"]["balance_flop_per_byte"] == pytest.approx(
        p["ceilings"]["sgemm_gflops"] / p["ceilings"]["copy_gbps"], rel=1e-9)
    m = p["memory"]
    assert 0 < m["lower_bound_bytes"] <= m["arena_bytes"] <= m["naive_bytes"], m
    assert m["weights_bytes"] > 0

    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(events) == p["kernels_per_inference"] * runs
    kernel_names = {k["name"] for k in p["kernels"]}
    for e in events:
        assert {"name", "cat", "ts", "dur", "pid", "tid", "args"} <= e.keys()
        assert e["name"] in kernel_names
        assert e["dur"] > 0 and e["ts"] >= 0
        assert {"op", "node", "shapes", "run"} <= e["args"].keys() and e["cat"] == e["args"]["op"]
    for r in range(runs):
        steps = [e for e in events if e["args"]["run"] == r]
        assert len(steps) == p["kernels_per_inference"]
        # One thread runs the steps one after another: each starts after the previous one ends.
        for a, b in zip(steps, steps[1:]):
            assert b["ts"] >= a["ts"] + a["dur"] - 1e-3, (a, b)
    ts = [e["ts"] for e in events]
    assert ts == sorted(ts), "events of one thread come in time order"

    # Totals: steps_ms is the median over runs of the per-run sum of step times; latency adds the
    # executor's own work around the steps; throughput and efficiency follow from latency.
    per_run = [sum(e["dur"] for e in events if e["args"]["run"] == r) / 1e3 for r in range(runs)]
    assert p["steps_ms"] == pytest.approx(median(per_run), rel=1e-6)
    assert 0 < p["steps_ms"] <= 1.1 * p["latency_ms"]
    assert p["inferences_per_s"] == pytest.approx(1e3 / p["latency_ms"], rel=1e-9)
    assert p["throughput_per_s"] == pytest.approx(p["batch"] * p["inferences_per_s"], rel=1e-9)
    assert p["compute_efficiency"] == pytest.approx(
        p["model_flops"] * p["throughput_per_s"] / p["batch"] / (p["ceilings"]["sgemm_gflops"] * 1e9), rel=1e-6)
    # A fraction of the sgemm ceiling. The ceiling is measured (--quick: a 512^3 sgemm) at another
    # moment on a shared machine, so noise can lift the fraction past one, but never to several:
    # that would be FLOPs or time in the wrong unit.
    assert 0 < p["compute_efficiency"] <= 3
    check_rows(p["kernels"], p, events, key=lambda e: e["name"])
    check_rows(p["ops"], p, events, key=lambda e: e["cat"])


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


def minilm_weight_bytes():
    return sum(numpy_helper.to_array(i).nbytes for i in onnx.load(model_path("minilm-l6")).graph.initializer)


def test_minilm_profile(tmp_path):
    r, p, trace = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 16, "--no-fusion")
    check_report(p, trace, runs=3)
    assert (p["batch"], p["seq"], p["nodes_in_model"]) == (1, 16, 689)
    matmul = next(o for o in p["ops"] if o["name"] == "MatMul")
    assert matmul["flops"] == minilm_matmul_flops(1, 16)
    assert matmul["calls"] == 48
    assert p["fusion_items"] == [] and p["kernels_per_inference"] == p["kernels_per_inference_unfused"]
    assert p["model_flops"] == pytest.approx(sum(o["flops"] for o in p["ops"]))
    assert matmul["flops"] / p["model_flops"] > 0.99, "MiniLM's work is its matmuls"
    # The plan holds the model's weights once, plus small folded constants.
    assert minilm_weight_bytes() <= p["memory"]["weights_bytes"] <= 1.01 * minilm_weight_bytes()
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
    assert minilm_weight_bytes() <= p["memory"]["weights_bytes"] <= 1.01 * minilm_weight_bytes()
    items = {i["name"]: i for i in p["fusion_items"]}
    assert len(items) == len(p["fusion_items"]), "item names are unique"
    kinds = collections.Counter(i["kind"] for i in p["fusion_items"])
    # Per layer: attention, the merged Q/K/V projection, two dense+bias+residual GEMMs, the FFN
    # GEMM with its GELU, two LayerNorms; plus the embeddings' LayerNorm and two elementwise groups
    # (the embedding sums, the attention mask).
    assert kinds == {"Attention": 6, "FusedMatMul": 24, "Gelu": 6, "LayerNorm": 13, "Elementwise": 2}, kinds
    for i in range(6):
        for item, kind in [("attention.self.attention", "Attention"), ("attention.self.qkv", "FusedMatMul"),
                           ("attention.output.dense.bias_residual", "FusedMatMul"),
                           ("intermediate.dense.bias_gelu", "FusedMatMul"), ("output.dense.bias_residual", "FusedMatMul"),
                           ("intermediate.intermediate_act_fn.gelu", "Gelu"),
                           ("attention.output.layernorm", "LayerNorm"), ("output.layernorm", "LayerNorm")]:
            assert items[f"layer{i}.{item}"]["kind"] == kind, (i, item)
        # The GELU item lives on inside the FFN GEMM's epilogue, so it is no kernel of its own.
        assert f"layer{i}.intermediate.intermediate_act_fn.gelu" in items[f"layer{i}.intermediate.dense.bias_gelu"]["nodes"]
    assert items["embeddings.layernorm"]["kind"] == "LayerNorm"
    # Every item but the GELUs is one kernel; the two embedding Gathers are the only other steps.
    assert p["kernels_per_inference"] == len(items) - kinds["Gelu"] + 2
    assert sorted(o["name"] for o in p["ops"]) == ["Attention", "Elementwise", "FusedMatMul", "Gather", "LayerNorm"]
    assert "fusion items" in r.stdout and "not fused" in r.stdout


def test_minilm_profile_at_seq_128_costs_the_known_2_87_gflop(tmp_path):
    # all-MiniLM-L6-v2 needs 2.87 GFLOP per 128-token sequence: per layer 4 projections
    # [128 x 384 x 384] and 2 FFN GEMMs [128 x 384 x 1536], plus QK^T and AV.
    matmuls = minilm_matmul_flops(1, 128)
    assert matmuls == pytest.approx(2.87e9, rel=1e-3)
    _, p, trace = profile(tmp_path, "minilm-l6", "--batch", 1, "--seq", 128, runs=1)
    check_report(p, trace, runs=1)
    # The GEMMs and attention are nearly all of it: bias, GELU, softmax, LayerNorm add under 1%.
    assert matmuls < p["model_flops"] < 1.01 * matmuls, p["model_flops"]


def test_minilm_batch_scales_flops_and_by_shape(tmp_path):
    _, p, _ = profile(tmp_path, "minilm-l6", "--batch", 2, "--seq", 8, "--by-shape", "--no-fusion", runs=1)
    matmul = next(o for o in p["ops"] if o["name"] == "MatMul")
    assert matmul["flops"] == minilm_matmul_flops(2, 8)
    # --by-shape splits kernel rows by shapes; the totals stay the same.
    assert all("->" in k["name"] for k in p["kernels"])
    assert sum(k["flops"] for k in p["kernels"] if k["op"] == "MatMul") == matmul["flops"]


def test_resnet18_profile(tmp_path):
    r, p, trace = profile(tmp_path, "resnet18", "--batch", 1, "--no-fusion", runs=2)
    check_report(p, trace, runs=2)
    # An image has no length: the header said "seq 128", which bound nothing.
    assert p["seq"] == 0 and " seq " not in r.stdout.splitlines()[0], r.stdout.splitlines()[0]
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
])
def test_bad_arguments(args, fragments):
    assert_one_line_error(run_fusor("profile", model_path("minilm-l6"), "--quick", *args), *fragments)


def test_a_json_report_in_a_missing_folder_is_a_usage_error():
    """Found before profiling, not after (test_bad_input.py covers the other commands)."""
    r = run_fusor("profile", model_path("minilm-l6"), "--quick", "--json", "/nonexistent-dir/p.json")
    assert r.returncode == 2 and "--json: folder /nonexistent-dir does not exist" in r.stderr, r.stderr


def test_bad_model_path(tmp_path):
    assert_one_line_error(run_fusor("profile", tmp_path / "nope.onnx", "--quick"), "not found")
