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
