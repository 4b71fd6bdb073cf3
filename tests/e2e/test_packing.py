"""Packed (padding-free) execution end to end: the precision gate's packing item on the BERT-style
models, `fusor serve` answering mixed-length MiniLM requests from packed token batches (checked
against ONNX Runtime on each request alone, and through the token metrics), and models that do
not pack served as before with the reason logged."""
import json
import re
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
import pytest
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import model_path
from serve_util import Served, get


@pytest.mark.parametrize("model", ["minilm-l6", "minilm-l6-op17", "minilm-l6-ort-rawmask"])
def test_check_keeps_packing_when_each_request_matches_running_alone(fusor, tmp_path, model):
    report = tmp_path / "report.json"
    r = fusor("check", model_path(model), "--seq", 128, "--no-edge-cases", "--report", report)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "packing: kept" in r.stdout, r.stdout
    packing = json.loads(report.read_text())["packing"]
    assert packing["packable"] and packing["passed"]
    # The shapes: lengths 1, 2, 127 and 128, left- and right-padded, two rows at once.
    labels = " | ".join(packing["requests"])
    for shape in ("1x1 tokens", "1x2 tokens, left-padded", "1x127 tokens, right-padded", "1x128 tokens",
                  "1x128 tokens, left-padded", "2x65 tokens"):
        assert shape in labels, labels
    assert packing["vs_padded"]["within"] and packing["vs_truth"]["within"], packing


def test_check_says_why_a_model_does_not_pack(fusor, tmp_path):
    report = tmp_path / "report.json"
    r = fusor("check", model_path("minilm-l6-ort"), "--seq", 16, "--no-edge-cases", "--report", report)
    assert r.returncode == 0, r.stdout + r.stderr
    packing = json.loads(report.read_text())["packing"]
    assert not packing["packable"]
    # ONNX Runtime's EmbedLayerNormalization counts each row's tokens (mask_index): a reduction
    # over tokens, which packing would mix across requests.
    assert "ReduceSum" in packing["reason"] and "not one row per token" in packing["reason"], packing


def minilm_request(rng, n, pad, left):
    ids = rng.integers(1000, 30000, (1, n)).astype(np.int64)
    mask = np.ones((1, n), np.int64)
    if pad:
        mask[0, :pad] = 0 if left else 1
        if not left:
            mask[0, n - pad:] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros((1, n), np.int64)}


def infer(url, feeds):
    client = httpclient.InferenceServerClient(url, network_timeout=120)
    inputs = []
    for name, v in feeds.items():
        t = httpclient.InferInput(name, list(v.shape), "INT64")
        t.set_data_from_numpy(v)
        inputs.append(t)
    out = client.infer("minilm", inputs, timeout=120).as_numpy("last_hidden_state")
    client.close()
    return out


def metric(text, name):
    m = re.search(rf'^{name}{{model="minilm"[^}}]*}} (\d+)', text, re.M)
    return int(m.group(1)) if m else None


def test_served_mixed_lengths_run_packed_and_match_onnxruntime(tmp_path):
    config = "serve:\n  classes:\n    default: {batch_window_ms: 20, max_batch: 16, max_batch_tokens: 512}\n"
    s = Served(tmp_path, config, models=[("minilm", model_path("minilm-l6"))])
    try:
        assert "model minilm: packed serving" in s.output(), s.output()
        # Before it reports ready, the server builds every capacity up to the budget (512); the
        # start-up probe built the first, 16.
        built = [int(n) for n in re.findall(r"packed session for (\d+) tokens", s.output())]
        assert sorted(built) == list(range(32, 257, 16)) + list(range(288, 513, 32)), s.output()
        assert "24 packed plan(s) per context, up to 512 tokens" in s.output(), s.output()
        sess = ort.InferenceSession(str(model_path("minilm-l6")), providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        cases = [(1, 0, False), (2, 1, True), (127, 30, False), (128, 0, False), (128, 50, True)]
        cases += [(int(rng.integers(8, 129)), int(rng.integers(0, 4)), bool(i % 2)) for i in range(27)]
        feeds = [minilm_request(rng, n, min(pad, n - 1), left) for n, pad, left in cases]
        with ThreadPoolExecutor(8) as pool:
            outs = list(pool.map(lambda f: infer(s.url, f), feeds))
        for f, got in zip(feeds, outs):
            want = sess.run(None, f)[0]
            assert got.shape == want.shape
            np.testing.assert_allclose(got, want, atol=3e-5, rtol=1e-4)
        text = get(f"127.0.0.1:{s.metrics}/metrics")[1].decode()
        useful = sum(f["input_ids"].size for f in feeds)
        assert metric(text, "fusor_useful_tokens_total") == useful, text
        assert metric(text, "fusor_computed_tokens_total") >= useful
        assert metric(text, "fusor_bucket_plan_tokens_total") >= useful
        assert "packed session for" in s.output()
    finally:
        assert s.stop() == 0, s.output()


def test_without_prebuilt_plans_a_batch_builds_its_plan(tmp_path):
    config = "serve:\n  prebuild_plans: false\n  classes:\n    default: {max_batch_tokens: 256}\n"
    s = Served(tmp_path, config, models=[("minilm", model_path("minilm-l6"))])
    try:
        assert "packed serving" in s.output() and "packed session for" not in s.output(), s.output()
        f = minilm_request(np.random.default_rng(2), 40, 0, False)
        sess = ort.InferenceSession(str(model_path("minilm-l6")), providers=["CPUExecutionProvider"])
        np.testing.assert_allclose(infer(s.url, f), sess.run(None, f)[0], atol=3e-5, rtol=1e-4)
        assert re.findall(r"packed session for (\d+) tokens", s.output()) == ["48"], s.output()
    finally:
        assert s.stop() == 0, s.output()


@pytest.mark.parametrize("model,config,reason", [
    ("minilm-l6-ort", "", "not packed: cannot pack tokens: node 'EmbedLayerNormalization_0/ReduceSum"),
    ("minilm-l6", "serve:\n  packing: false\n", "not packed: serve.packing is off"),
])
def test_models_that_do_not_pack_are_served_by_length_buckets(tmp_path, model, config, reason):
    s = Served(tmp_path, config, models=[("minilm", model_path(model))])
    try:
        assert reason in s.output(), s.output()
        rng = np.random.default_rng(1)
        sess = ort.InferenceSession(str(model_path(model)), providers=["CPUExecutionProvider"])
        for n in (5, 37):
            f = minilm_request(rng, n, 2, False)
            np.testing.assert_allclose(infer(s.url, f), sess.run(None, f)[0], atol=3e-5, rtol=1e-4)
        text = get(f"127.0.0.1:{s.metrics}/metrics")[1].decode()
        assert metric(text, "fusor_useful_tokens_total") == 5 + 37
        assert metric(text, "fusor_computed_tokens_total") == 16 + 48  # each alone, padded to seq_bucket 16
    finally:
        assert s.stop() == 0, s.output()


@pytest.mark.parametrize("model,packs", [("minilm-l6-ort", False), ("minilm-l6", True)])
def test_profile_lists_why_a_model_does_not_pack_with_the_declined_fusions(fusor, tmp_path, model, packs):
    out = tmp_path / "profile.json"
    r = fusor("profile", model_path(model), "--runs", 1, "--warmup", 0, "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    declined = [d for d in json.loads(out.read_text())["not_fused"] if d["pass"] == "pack_tokens"]
    if packs:
        assert not declined, declined
    else:
        assert len(declined) == 1 and "cannot pack tokens" in declined[0]["reason"], declined


def test_a_bucket_past_the_models_positions_falls_back_to_the_requests_length(tmp_path):
    """seq_bucket: 384 padded a valid 400-token request to 768, past MiniLM's 512 positions, and the
    server answered 400, blaming the client."""
    config = "serve:\n  packing: false\n  seq_bucket: 384\n"
    s = Served(tmp_path, config, models=[("minilm", model_path("minilm-l6"))])
    try:
        rng = np.random.default_rng(3)
        sess = ort.InferenceSession(str(model_path("minilm-l6")), providers=["CPUExecutionProvider"])
        for n in (400, 450):
            f = minilm_request(rng, n, 0, False)
            np.testing.assert_allclose(infer(s.url, f), sess.run(None, f)[0], atol=3e-5, rtol=1e-4)
        assert s.output().count("batches padded to 768 tokens fail") == 1, s.output()  # learnt once
        with pytest.raises(InferenceServerException, match="400|out of range|index"):
            infer(s.url, minilm_request(rng, 513, 0, False))  # past the model's positions: the client's
    finally:
        assert s.stop() == 0, s.output()
