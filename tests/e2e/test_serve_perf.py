"""perf_analyzer (Triton's load generator, from PyPI) over HTTP and gRPC against fusor serve, and
MiniLM served in padded batches against ONNX Runtime on each request alone."""
import csv
import pathlib
import subprocess
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as httpclient

from conftest import ROOT, model_path
from serve_util import Served

PERF_ANALYZER = ROOT / ".venv" / "bin" / "perf_analyzer"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("perf"), "batch_window_ms: 2\n")
    yield s
    assert s.stop() == 0, s.output()


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_drives_the_server(demo, protocol, tmp_path):
    if not PERF_ANALYZER.exists():
        pytest.fail(f"{PERF_ANALYZER} is missing: run scripts/setup")
    url = demo.url if protocol == "http" else demo.grpc_url
    report = tmp_path / "pa.csv"
    r = subprocess.run([str(PERF_ANALYZER), "-m", "demo", "-i", protocol, "-u", url, "--shape", "input_ids:16",
                        "--shape", "attention_mask:16", "--input-data", "zero", "--concurrency-range", "4",
                        "--measurement-interval", "1000", "--stability-percentage", "50", "--max-trials", "10",
                        "-f", str(report)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(csv.DictReader(report.open()))
    assert float(row["Inferences/Second"]) > 10
    assert "error" not in r.stdout.lower()


def test_minilm_in_padded_batches_matches_onnx_runtime(tmp_path):
    path = model_path("minilm-l6")
    s = Served(tmp_path, """
serve:
  seq_bucket: 16
  classes:
    default: {batch_window_ms: 300, adaptive_window: false, max_batch: 8}
""", models=[("minilm", path)])
    try:
        rng = np.random.default_rng(0)
        lengths = [5, 9, 13, 16]
        requests = []
        for n in lengths:
            ids = rng.integers(1000, 2000, size=(1, n)).astype(np.int64)
            requests.append({"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)})

        def served(feeds):
            client = httpclient.InferenceServerClient(s.url, network_timeout=60)
            inputs = []
            for name, value in feeds.items():
                t = httpclient.InferInput(name, list(value.shape), "INT64")
                t.set_data_from_numpy(value, binary_data=True)
                inputs.append(t)
            return client.infer("minilm", inputs, timeout=60).as_numpy("last_hidden_state")

        with ThreadPoolExecutor(len(requests)) as pool:  # all four land in one padded batch
            outputs = list(pool.map(served, requests))
        stats = httpclient.InferenceServerClient(s.url).get_inference_statistics("minilm")["model_stats"][0]
        assert stats["execution_count"] < len(lengths), stats
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        for feeds, got in zip(requests, outputs):
            want = session.run(["last_hidden_state"], feeds)[0]
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, atol=2e-3, rtol=1e-3)
    finally:
        assert s.stop() == 0
