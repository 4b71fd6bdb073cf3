"""Both executors match ONNX Runtime (ORT_ENABLE_ALL) on the small random-weight models of
scripts/model_zoo.py (docs/models.md), elementwise within |a-b| <= 1e-5 + 1e-4*|b|, at two or
more shapes each. The decoders (scripts/decoder_zoo.py) get decoder inputs (positions after the
past, a mask over past + sequence), including the empty past of a first step, with dims from
their config.json; the merged one takes its no-past branch on a prompt and its past branch on a
decode step. The others get ort_compare's inputs."""
import json
import sys

import numpy as np
import pytest

import ort_compare
from conftest import FUSOR, ROOT, model_path

sys.path.insert(0, str(ROOT / "scripts"))
import decoder_export  # noqa: E402

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
# (model, batch, seq, past): a prompt (empty past), then decode steps after it.
DECODER_CASES = [
    ("llama-tiny", 1, 7, 0),
    ("llama-tiny", 2, 16, 0),
    ("llama-tiny", 2, 1, 9),
    ("gpt2-tiny", 1, 7, 0),
    ("gpt2-tiny", 2, 1, 9),
    ("llama-tiny-merged", 1, 7, 0),
    # The branches disagree on present's length (past + 1 in one, 1 in the other): the session
    # is planned per run with use_cache_branch known.
    ("llama-tiny-merged", 2, 1, 9),
]


def decoder_inputs(model, batch, seq, past):
    cfg = json.loads((model_path(model).parent / "config.json").read_text())
    feeds = decoder_export.feeds(batch, seq, past, 0, decoder_export.decoder_dims(cfg))
    if model.endswith("-merged"):
        feeds[decoder_export.USE_CACHE_BRANCH] = np.array([past > 0])
    return feeds


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
                inputs = decoder_inputs(model, batch, seq, past)
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
@pytest.mark.parametrize("model,batch,seq,past", DECODER_CASES)
def test_decoder_matches_onnx_runtime(model, batch, seq, past, executor, ort_results, tmp_path):
    check(model, ort_results(model, batch, seq, past), executor, tmp_path)
