"""MobileNetV3-small (depthwise convs, HardSwish, squeeze-excite) through `fusor bench`: every
batch size runs, and the fused plan has fewer kernels than the model has nodes. Its outputs
are checked against ONNX Runtime in test_ort_parity.py."""
import json

import onnx

from conftest import model_path, run_fusor


def test_bench_runs_every_batch_with_a_fused_plan(tmp_path):
    model = model_path("mobilenetv3-small")
    report = tmp_path / "bench.json"
    r = run_fusor("bench", model, "--batch", "1,8", "--seconds", "0.01", "--warmup", "0",
                  "--json", report)
    assert r.returncode == 0, r.stderr
    results = {res["batch"]: res for res in json.loads(report.read_text())["results"]}
    assert sorted(results) == [1, 8]
    nodes = len(onnx.load(str(model), load_external_data=False).graph.node)
    for res in results.values():
        assert res["runs"] >= 1
        assert 0 < res["kernels_per_inference"] < nodes
