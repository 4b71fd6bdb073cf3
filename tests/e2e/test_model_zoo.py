"""Both executors match ONNX Runtime (ORT_ENABLE_ALL) on the small random-weight models of
scripts/model_zoo.py (docs/models.md), elementwise within |a-b| <= 1e-5 + 1e-4*|b|, at two or
more shapes each. llama-tiny gets decoder inputs (positions after the past, a mask over past +
sequence), including the empty past of a first step; the others get ort_compare's inputs."""
import sys

import pytest

import ort_compare
from conftest import FUSOR, ROOT, model_path

sys.path.insert(0, str(ROOT / "scripts"))
import model_zoo  # noqa: E402

# (model, batch, seq): seq binds the non-batch dynamic dim (wav2vec2's samples); None: none.
CASES = [
    ("yolo-tiny", 1, None),
    ("yolo-tiny", 2, None),
    ("unet-tiny", 1, None),
    ("unet-tiny", 2, None),
    ("wav2vec2-tiny", 1, 16000),
    ("wav2vec2-tiny", 2, 8000),
    ("resnet18-op21", 1, None),
    ("resnet18-op21", 2, None),
]
# (batch, seq, past): a prompt (empty past) at two lengths, then one decode step.
LLAMA_CASES = [(1, 7, 0), (2, 16, 0), (2, 1, 9)]


def llama_inputs(batch, seq, past):
    cfg = model_zoo.LLAMA
    heads = cfg["hidden_size"] // cfg["num_attention_heads"]
    return model_zoo.llama_feeds(batch, seq, past, seed=0, heads=cfg["num_key_value_heads"],
                                 head_dim=heads, layers=cfg["num_hidden_layers"],
                                 vocab=cfg["vocab_size"])


@pytest.fixture(scope="module")
def ort_results(tmp_path_factory):
    """Inputs and ONNX Runtime's outputs, written once per case for both executors."""
    cache = {}

    def get(model, batch, seq, past=None):
        key = (model, batch, seq, past)
        if key not in cache:
            out = tmp_path_factory.mktemp(f"{model}-b{batch}-s{seq}-p{past}")
            if past is None:
                ort_compare.gen(model_path(model), batch, seq or 1, out)
            else:
                inputs = llama_inputs(batch, seq, past)
                ort_compare.save_npy_dir(out / "inputs", inputs)
                ort_compare.save_npy_dir(out / "ort", ort_compare.run_ort(model_path(model), inputs))
            cache[key] = out
        return cache[key]

    return get


def check(model, data, executor, tmp_path):
    ok, report = ort_compare.fusor_matches_ort(FUSOR, model_path(model), data, tmp_path, executor == "reference")
    print(report)
    assert ok, report


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("model,batch,seq", CASES)
def test_matches_onnx_runtime(model, batch, seq, executor, ort_results, tmp_path):
    check(model, ort_results(model, batch, seq), executor, tmp_path)


@pytest.mark.parametrize("executor", ["fast", "reference"])
@pytest.mark.parametrize("batch,seq,past", LLAMA_CASES)
def test_llama_decoder_matches_onnx_runtime(batch, seq, past, executor, ort_results, tmp_path):
    check("llama-tiny", ort_results("llama-tiny", batch, seq, past), executor, tmp_path)
