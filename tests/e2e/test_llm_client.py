"""aiperf, NVIDIA's LLM serving benchmark client from PyPI, drives `fusor serve`'s OpenAI API
unchanged (issue #17): a short streaming run of /v1/completions whose every request must come
back whole, with the token counts asked for, and whose count the server's own metrics must agree
with. The long run is bench/serve-generate."""
import pytest
from transformers import AutoTokenizer

import llm_client
from conftest import MODELS
from serve_util import Served, get

MODEL = MODELS / "llama-tiny"
LOAD = llm_client.Load(concurrency=4, requests=24, input_tokens=32, output_tokens=16, streaming=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not llm_client.AIPERF.exists():
        pytest.fail(f"{llm_client.AIPERF} is missing: run scripts/setup (make test does)")
    s = Served(tmp_path_factory.mktemp("llm_client"), models=[("llama", MODEL)])
    yield s
    assert s.stop() == 0, s.output()


def scrape(server):
    status, body = get(f"127.0.0.1:{server.metrics}/metrics")
    assert status == 200
    return body.decode()


def test_aiperf_streams_completions(server, tmp_path):
    before = scrape(server)
    s = llm_client.run(f"http://{server.url}", "llama", MODEL, LOAD, tmp_path / "aiperf", timeout=300)
    after = scrape(server)

    assert s["errors"] == 0, s["error_messages"]
    assert s["requests"] == LOAD.requests
    # The server's usage, as aiperf read it from the stream: ignore_eos held every request to
    # max_tokens, and the prompt aiperf made is as many tokens for the server as for Hugging Face.
    tokenizer = AutoTokenizer.from_pretrained(str(MODEL))
    for r in s["per_request"]:
        assert r["body"]["stream"] is True and r["body"]["max_tokens"] == LOAD.output_tokens
        assert r["completion_tokens"] == LOAD.output_tokens, r
        assert r["output_tokens"] == LOAD.output_tokens, r
        assert r["input_tokens"] == LOAD.input_tokens, r
        assert r["prompt_tokens"] == len(tokenizer(r["body"]["prompt"]).input_ids), r
    # Streaming measured per token: positive numbers, p99 at least p50.
    for name in ("ttft_ms", "itl_ms"):
        assert 0 < s[f"{name}_p50"] <= s[f"{name}_p99"], s
    assert s["output_tokens_per_s"] > 0

    # The server counted what the client did.
    def delta(name, **labels):
        return (llm_client.counter(after, name, model_name="llama", **labels)
                - llm_client.counter(before, name, model_name="llama", **labels))

    assert delta("fusor:request_success_total") == LOAD.requests
    assert delta("fusor:request_success_total", finished_reason="length") == LOAD.requests
    assert delta("fusor:generation_tokens_total") == LOAD.requests * LOAD.output_tokens
    assert delta("fusor:prompt_tokens_total") == sum(r["prompt_tokens"] for r in s["per_request"])
    assert delta("fusor:request_failure_total") == 0
