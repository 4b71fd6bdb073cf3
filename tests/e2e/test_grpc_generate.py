"""A decoder over KServe's tensors, as Triton serves its LLM backends (vLLM, TensorRT-LLM):
metadata and config (decoupled) on both protocols, gRPC ModelStreamInfer with a response per
token, ModelInfer answered whole, and perf_analyzer's --streaming load, on the real llama-tiny.
Encoders answer on the same stream. Greedy text must equal Triton generate's over HTTP.
"""
import csv
import json
import queue
import subprocess
import time

import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from conftest import MODELS, ROOT, model_path
from serve_util import Served, post
from test_generate_soak import metrics, total

PROMPT = "Once upon a time, there was a little"
PERF_ANALYZER = ROOT / ".venv" / "bin" / "perf_analyzer"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model_path("llama-tiny")
    s = Served(tmp_path_factory.mktemp("grpc-generate"),
               models=[("llama", MODELS / "llama-tiny"), ("mobilenet", model_path("mobilenetv3-small"))])
    yield s
    assert s.stop() == 0, s.output()


def generate_inputs(text=PROMPT, max_tokens=12, stream=None, **flags):
    def tensor(name, datatype, value):
        t = grpcclient.InferInput(name, [1], datatype)
        t.set_data_from_numpy(np.array([value], dtype=object if datatype == "BYTES" else None))
        return t
    inputs = [tensor("text_input", "BYTES", text.encode()), tensor("max_tokens", "INT32", np.int32(max_tokens)),
              tensor("sampling_parameters", "BYTES", json.dumps({"temperature": 0, "ignore_eos": True}).encode())]
    if stream is not None:
        inputs.append(tensor("stream", "BOOL", stream))
    inputs += [tensor(k, "BOOL", v) for k, v in flags.items()]
    return inputs


def http_generate(server, max_tokens=12):
    status, body = post(server.url + "/v2/models/llama/generate", json.dumps(
        {"text_input": PROMPT, "max_tokens": max_tokens, "temperature": 0, "ignore_eos": True}).encode())
    assert status == 200, body
    return json.loads(body)["text_output"]


class Stream:
    def __init__(self, server):
        self.client = grpcclient.InferenceServerClient(server.grpc_url)
        self.results = queue.Queue()
        self.client.start_stream(callback=lambda result, error: self.results.put((result, error)))

    def next(self):
        return self.results.get(timeout=60)

    def until_final(self):
        """Every response of one request up to its final one: [(text or None, response)]."""
        out = []
        while True:
            result, error = self.next()
            assert error is None, str(error)
            r = result.get_response()
            text = result.as_numpy("text_output")
            out.append((None if text is None else text[0].decode(), r))
            if r.parameters["triton_final_response"].bool_param:
                return out

    def close(self, cancel=False):
        self.client.stop_stream(cancel_requests=cancel)
        self.client.close()


def test_the_decoder_is_a_decoupled_kserve_model_on_both_protocols(server):
    g = grpcclient.InferenceServerClient(server.grpc_url)
    h = httpclient.InferenceServerClient(server.url)
    assert g.is_model_ready("llama") and h.is_model_ready("llama")
    for meta in (g.get_model_metadata("llama", as_json=True), h.get_model_metadata("llama")):
        assert meta["inputs"][0]["name"] == "text_input" and meta["inputs"][0]["datatype"] == "BYTES"
        assert meta["outputs"][0]["name"] == "text_output"
    for config in (g.get_model_config("llama", as_json=True)["config"], h.get_model_config("llama")):
        assert config["model_transaction_policy"]["decoupled"] is True
        assert [i["name"] for i in config["input"] if not i.get("optional")] == ["text_input"]
    assert g.get_inference_statistics("llama", as_json=True)["model_stats"][0]["name"] == "llama"


def test_a_stream_answers_token_by_token_with_generates_text(server):
    expected = http_generate(server)
    s = Stream(server)
    try:
        s.client.async_stream_infer("llama", generate_inputs(stream=True), request_id="r1",
                                    enable_empty_final_response=True)
        responses = s.until_final()
        pieces = [t for t, _ in responses[:-1]]
        assert None not in pieces and len(pieces) >= 6  # one per token that completes text
        assert "".join(pieces) == expected
        assert responses[-1][0] is None  # the empty final response the client asked for
        assert {r.id for _, r in responses} == {"r1"}
        assert not any(r.parameters["triton_final_response"].bool_param for _, r in responses[:-1])
    finally:
        s.close()


def test_without_an_empty_final_response_the_last_token_is_final(server):
    """Every token's response said triton_final_response=false, the last one too, unless the
    client asked for an empty final response: a client keeping the stream open for more requests
    never learnt that this one ended. Triton marks the response with the last token final."""
    expected = http_generate(server)
    s = Stream(server)
    try:
        s.client.async_stream_infer("llama", generate_inputs(stream=True), request_id="r2")
        responses = s.until_final()  # times out (60 s) if no response is final
        assert "".join(t for t, _ in responses) == expected and responses[-1][0]
        assert [r.parameters["triton_final_response"].bool_param for _, r in responses].count(True) == 1
        # The next request on the same stream is answered too, and nothing of the first follows.
        s.client.async_stream_infer("llama", generate_inputs(stream=True), request_id="r3")
        assert {r.id for _, r in s.until_final()} == {"r3"}
    finally:
        s.close()


def test_a_stream_without_stream_input_answers_once_with_the_extras_asked_for(server):
    s = Stream(server)
    try:
        s.client.async_stream_infer("llama", generate_inputs(return_finish_reason=True, return_num_output_tokens=True),
                                    request_id="whole")
        [(text, r)] = s.until_final()
        assert text == http_generate(server)
        outputs = {o.name for o in r.outputs}
        assert outputs == {"text_output", "finish_reason", "num_output_tokens"}
    finally:
        s.close()


def test_errors_answer_on_the_stream_which_stays_open_and_encoders_share_it(server):
    s = Stream(server)
    try:
        s.client.async_stream_infer("nope", generate_inputs(stream=True))
        assert "unknown model 'nope'" in str(s.next()[1])
        s.client.async_stream_infer("llama", generate_inputs(stream=True) + generate_inputs()[:1])
        assert "given twice" in str(s.next()[1])
        bad = grpcclient.InferInput("max_tokens", [2], "INT32")
        bad.set_data_from_numpy(np.array([1, 2], np.int32))
        s.client.async_stream_infer("llama", generate_inputs()[:1] + [bad])
        assert "takes one" in str(s.next()[1])
        image = np.random.default_rng(0).random((1, 3, 224, 224), np.float32)
        x = grpcclient.InferInput("input", list(image.shape), "FP32")
        x.set_data_from_numpy(image)
        s.client.async_stream_infer("mobilenet", [x], request_id="enc")
        result, error = s.next()
        assert error is None, error
        unary = grpcclient.InferenceServerClient(server.grpc_url).infer("mobilenet", [x])
        name = unary.get_response().outputs[0].name
        np.testing.assert_array_equal(result.as_numpy(name), unary.as_numpy(name))
        assert result.get_response().id == "enc"
    finally:
        s.close()


def test_model_infer_answers_a_generation_whole_and_refuses_stream(server):
    g = grpcclient.InferenceServerClient(server.grpc_url)
    assert g.infer("llama", generate_inputs()).as_numpy("text_output")[0].decode() == http_generate(server)
    with pytest.raises(InferenceServerException, match="ModelStreamInfer"):
        g.infer("llama", generate_inputs(stream=True))


def test_cancelling_the_stream_frees_the_kv_cache(server):
    s = Stream(server)
    for i in range(4):
        s.client.async_stream_infer("llama", generate_inputs(max_tokens=400, stream=True), request_id=str(i))
    s.next()  # generations are running
    s.close(cancel=True)
    for _ in range(100):
        m = metrics(server)
        if total(m, "fusor:num_requests_running") == 0 and total(m, "fusor:kv_cache_usage_perc") == 0:
            break
        time.sleep(0.1)
    assert total(m, "fusor:num_requests_running") == 0
    assert total(m, "fusor:kv_cache_usage_perc") == 0
    assert total(m, "fusor:request_success_total", 'finished_reason="abort"') >= 4


def test_perf_analyzer_streams_the_decoder(server, tmp_path):
    data = tmp_path / "input.json"
    data.write_text(json.dumps({"data": [{"text_input": [PROMPT], "max_tokens": [8], "stream": [True],
                                          "ignore_eos": [True]}]}))
    report = tmp_path / "pa.csv"
    r = subprocess.run([str(PERF_ANALYZER), "-m", "llama", "-i", "grpc", "-u", server.grpc_url, "--streaming",
                        "--input-data", str(data), "--concurrency-range", "2", "--measurement-interval", "1000",
                        "--stability-percentage", "50", "--max-trials", "10", "-f", str(report)],
                       capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stdout + r.stderr
    row = next(csv.DictReader(report.open()))
    assert float(row["Inferences/Second"]) > 1
    # A response per token that completes text (8 tokens; a piece of a character waits for the rest).
    assert float(row["Response Throughput"]) > 5 * float(row["Inferences/Second"])


def test_sigterm_ends_an_idle_open_stream(tmp_path):
    s = Served(tmp_path, models=[("llama", MODELS / "llama-tiny")])
    stream = Stream(s)
    try:
        stream.client.async_stream_infer("llama", generate_inputs(max_tokens=4, stream=True),
                                         enable_empty_final_response=True)
        stream.until_final()
        started = time.monotonic()
        assert s.stop(timeout=20) == 0, s.output()
        assert time.monotonic() - started < 10  # the stream stays open on the client's side
    finally:
        stream.close()
