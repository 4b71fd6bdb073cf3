"""Mean-pooled, normalized MiniLM sentence embeddings: fusor gives ONNX Runtime's cosine
similarities within 1e-5, on a padded batch (sentences of different lengths); the int8 export
(minilm-l6-int8) keeps them within embeddings.QUANTIZED_ATOL of the float model's."""
import numpy as np

import embeddings
from conftest import FUSOR, model_path


def test_sentence_similarities_match_onnx_runtime():
    model = model_path("minilm-l6")
    expected = embeddings.similarities(embeddings.ort_runner(model))
    got = embeddings.similarities(embeddings.fusor_runner(FUSOR, model))
    print("ort  ", np.round(expected, 6))
    print("fusor", np.round(got, 6))
    assert embeddings.sane(expected)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)


def test_quantized_similarities_stay_near_float():
    expected = embeddings.similarities(embeddings.ort_runner(model_path("minilm-l6")))
    got = embeddings.similarities(embeddings.fusor_runner(FUSOR, model_path("minilm-l6-int8")))
    print("float", np.round(expected, 6))
    print("int8 ", np.round(got, 6))
    np.testing.assert_allclose(got, expected, rtol=0, atol=embeddings.QUANTIZED_ATOL)
