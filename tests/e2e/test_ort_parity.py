"""Both executors match ONNX Runtime on the real models, elementwise within
|a-b| <= 1e-5 + 1e-4*|b|; the max abs and max rel errors are printed (pytest -s shows them)."""

import pytest

import ort_compare
from conftest import FUSOR, model_path

CASES = [
    ("minilm-l6", 1, 128),
    ("minilm-l6", 8, 128),
    ("minilm-l6", 1, 1),
    ("minilm-l6", 1, 7),
    ("minilm-l6-op17", 2, 16),
    ("resnet18", 1, None),
    ("resnet18", 8, None),
    ("mobilenetv3-small", 1, None),
    ("mobilenetv3-small", 8, None),
]


@pytest.fixture(scope="module")
def ort_results(tmp_path_factory):
    cache = {}

    def get(model, batch, seq):
        key = (model, batch, seq)
        if key not in cache:
            out = tmp_path_factory.mktemp(f"{model}-b{batch}-s{seq}")
            ort_compare.gen(model_path(model), batch, seq or 1, out)
            cache[key] = out
        return cache[key]

    return get


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("model,batch,seq", CASES)
def test_matches_onnx_runtime(model, batch, seq, executor, ort_results, tmp_path):
    data = ort_results(model, batch, seq)
    ok, report = ort_compare.fusor_matches_ort(FUSOR, model_path(model), data, tmp_path, executor == "reference")
    print(report)
    assert ok, report


@pytest.mark.parametrize("special", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_pixel_gives_what_onnx_runtime_gives(special, tmp_path):
    """A NaN pixel through resnet18's fused Conv+ReLU (oneDNN's ReLU is max(x, 0)) gave the
    logits of a 0 pixel, silently: ONNX Runtime gives 1000 NaN. Such inputs now run on the
    reference kernels; an Inf meets its opposite inside and becomes NaN the same way."""
    import numpy as np
    import onnxruntime as ort
    from conftest import run_fusor

    model = model_path("resnet18")
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    x[0, 1, 100, 100] = special
    np.save(tmp_path / "x.npy", x)
    want = ort.InferenceSession(str(model)).run(None, {"input": x})[0]
    r = run_fusor("run", model, "--input", f"input={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    got = np.load(tmp_path / "out" / "output.npy")
    assert np.array_equal(np.isnan(got), np.isnan(want)) and np.isnan(want).sum() == 1000, (np.isnan(got).sum(), np.isnan(want).sum())
    # A finite input still runs on the fast kernels, within the usual tolerance of ONNX Runtime.
    x[0, 1, 100, 100] = 0.5
    np.save(tmp_path / "x.npy", x)
    r = run_fusor("run", model, "--input", f"input={tmp_path / 'x.npy'}", "--output-dir", tmp_path / "out")
    want = ort.InferenceSession(str(model)).run(None, {"input": x})[0]
    assert np.allclose(np.load(tmp_path / "out" / "output.npy"), want, rtol=1e-4, atol=1e-4)
