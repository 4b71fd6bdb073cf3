"""The OpenAI-compatible API and Triton's generate extension of `fusor serve` (issue #17) on the
real llama-tiny decoder, driven by the real `openai` Python client (and plain HTTP for Triton).

Greedy completions must equal `fusor generate`'s, streamed or not; the stream's pieces must join
to the whole text; usage, stop, seed, max_tokens and every refusal as documented in
docs/serve-generate.md; a client that disconnects mid-stream must leave the server healthy.
One server for the module.
"""
import gzip
import json
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import openai
import pytest
from tokenizers import Tokenizer

from conftest import MODELS, model_path, run_fusor
from serve_util import Served, get, post

MODEL = "llama-tiny"
PROMPT = "Once upon a time, there was a little"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    model_path(MODEL)
    s = Served(tmp_path_factory.mktemp("openai"), models=[("llama", MODELS / MODEL)])
    yield s
    assert s.stop() == 0, s.output()


@pytest.fixture(scope="module")
def client(server):
    c = openai.OpenAI(base_url=f"http://{server.url}/v1", api_key="unused", max_retries=0, timeout=60)
    yield c
    c.close()  # else its idle keep-alive connections hold the server's shutdown for the keep-alive timeout


def prompt_ids(text=PROMPT):
    return Tokenizer.from_file(str(MODELS / MODEL / "tokenizer.json")).encode(text).ids


def fusor_generate(ids, n):
    r = run_fusor("generate", MODELS / MODEL, "--prompt-ids", ",".join(map(str, ids)), "--max-new-tokens", n,
                  "--ignore-eos", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def greedy(client, extra_body=(), **kw):
    return client.completions.create(model="llama", temperature=0, extra_body={"ignore_eos": True, **dict(extra_body)}, **kw)


def sse_events(body):
    """The `data:` payloads of a server-sent-events body."""
    return [line[len("data: "):] for line in body.decode().split("\n\n") if line.startswith("data: ")]


def test_models_and_health(server, client):
    models = client.models.list()
    assert [m.id for m in models.data] == ["llama"]
    assert models.data[0].owned_by == "fusor"
    assert client.models.retrieve("llama").id == "llama"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("nope")
    with urllib.request.urlopen(f"http://{server.url}/health") as r:
        assert r.status == 200


def test_greedy_completion_equals_fusor_generate(client):
    ids = prompt_ids()
    expected = fusor_generate(ids, 20)
    for prompt in (ids, PROMPT):  # token ids, and the same as text
        c = greedy(client, prompt=prompt, max_tokens=20)
        assert c.object == "text_completion" and c.id.startswith("cmpl-") and c.model == "llama"
        assert c.choices[0].text == expected["text"]
        assert c.choices[0].finish_reason == "length"
        assert (c.usage.prompt_tokens, c.usage.completion_tokens) == (len(ids), 20)
        assert c.usage.total_tokens == len(ids) + 20


def test_generation_config_sets_what_a_request_leaves_out(tmp_path):
    """As vLLM reads it: generation_config.json's keys replace OpenAI's defaults for the fields a
    request leaves out (here greedy, a repetition penalty and 5 tokens); a field given wins."""
    folder = tmp_path / "model"
    folder.mkdir()
    for f in (MODELS / MODEL).iterdir():
        if f.name != "generation_config.json":
            (folder / f.name).symlink_to(f)
    config = {"eos_token_id": 2, "do_sample": False, "repetition_penalty": 1.3, "max_new_tokens": 5}
    (folder / "generation_config.json").write_text(json.dumps(config))
    ids = prompt_ids()
    penalised = run_fusor("generate", MODELS / MODEL, "--prompt-ids", ",".join(map(str, ids)), "--max-new-tokens", 5,
                          "--ignore-eos", "--repetition-penalty", 1.3, "--json")
    assert penalised.returncode == 0, penalised.stderr
    penalised = json.loads(penalised.stdout)
    plain = fusor_generate(ids, 8)
    assert penalised["output_ids"] != plain["output_ids"][:5]  # else the test shows nothing
    s = Served(tmp_path, models=[("llama", folder)])
    try:
        assert "sampling defaults from generation_config.json: do_sample false, repetition_penalty 1.3, " \
               "max_new_tokens 5" in s.output()
        url = f"{s.url}/v1/completions"
        status, body = post(url, json.dumps({"model": "llama", "prompt": ids, "ignore_eos": True}).encode())
        assert status == 200, body
        assert json.loads(body)["choices"][0]["text"] == penalised["text"]
        given = {"model": "llama", "prompt": ids, "ignore_eos": True, "temperature": 0, "repetition_penalty": 1.0,
                 "max_tokens": 8}
        status, body = post(url, json.dumps(given).encode())
        assert status == 200, body
        assert json.loads(body)["choices"][0]["text"] == plain["text"]
    finally:
        assert s.stop() == 0, s.output()


def test_stats_count_an_unknown_class_and_say_when_the_last_request_finished(server, client):
    """A request naming an unknown class was refused but not counted, and a decoder's
    last_inference stayed 0."""
    def stats():
        return json.loads(get(f"{server.url}/v2/models/llama/stats")[1])["model_stats"][0]

    before = stats()
    body = {"model": "llama", "prompt": "Hi", "max_tokens": 2, "fusor_class": "nope"}
    assert post(f"{server.url}/v1/completions", json.dumps(body).encode())[0] == 400
    greedy(client, prompt="Hi", max_tokens=2)
    after = stats()
    assert after["inference_stats"]["fail"]["count"] == before["inference_stats"]["fail"]["count"] + 1
    assert abs(after["last_inference"] - time.time() * 1000) < 60_000, after


def test_a_kserve_infer_sent_to_the_decoder_is_counted_as_its_failure(server):
    """POST /v2/models/llama/infer (a decoder's, which serves /generate instead) got a 400 that no
    failure counter saw: 2675 in a soak, 0 counted."""
    def failures():
        return json.loads(get(f"{server.url}/v2/models/llama/stats")[1])["model_stats"][0]["inference_stats"]["fail"]["count"]

    before = failures()
    body = {"inputs": [{"name": "text_input", "shape": [1], "datatype": "BYTES", "data": ["Hi"]}]}
    code, answer = post(f"{server.url}/v2/models/llama/infer", json.dumps(body).encode())
    assert code == 400 and b"is a generative model" in answer
    assert failures() == before + 1


def test_stream_joins_to_the_whole_text_with_usage(client):
    whole = greedy(client, prompt=PROMPT, max_tokens=24).choices[0].text
    chunks = list(greedy(client, prompt=PROMPT, max_tokens=24, stream=True, stream_options={"include_usage": True}))
    text_chunks = [c for c in chunks if c.choices]
    assert "".join(c.choices[0].text for c in text_chunks) == whole
    assert len(text_chunks) > 5  # token by token, not one piece
    assert text_chunks[-1].choices[0].finish_reason == "length"
    assert all(c.choices[0].finish_reason is None for c in text_chunks[:-1])
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 24
    assert len({c.id for c in chunks}) == 1


def test_chat_stream_and_not(client):
    messages = [{"role": "system", "content": "You tell stories."}, {"role": "user", "content": "Tell me one."}]
    c = client.chat.completions.create(model="llama", messages=messages, max_tokens=16, temperature=0,
                                       extra_body={"ignore_eos": True})
    assert c.object == "chat.completion" and c.id.startswith("chatcmpl-")
    assert c.choices[0].message.role == "assistant" and c.choices[0].finish_reason == "length"
    assert c.usage.completion_tokens == 16 and c.usage.prompt_tokens > 5
    chunks = list(client.chat.completions.create(model="llama", messages=messages, max_tokens=16, temperature=0,
                                                 stream=True, stream_options={"include_usage": True},
                                                 extra_body={"ignore_eos": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == c.choices[0].message.content
    assert chunks[-2].choices[0].finish_reason == "length"
    assert chunks[-1].usage.total_tokens == c.usage.total_tokens
    # Content parts of type text are joined (by newlines, as vLLM joins them).
    parts = [{"role": "user", "content": [{"type": "text", "text": "Tell me"}, {"type": "text", "text": "one."}]}]
    plain = [{"role": "user", "content": "Tell me\none."}]
    a = client.chat.completions.create(model="llama", messages=parts, max_tokens=8, temperature=0)
    b = client.chat.completions.create(model="llama", messages=plain, max_tokens=8, temperature=0)
    assert a.choices[0].message.content == b.choices[0].message.content


def test_stop_string_cuts_the_text(client):
    whole = greedy(client, prompt=PROMPT, max_tokens=32).choices[0].text
    assert len(whole) > 20, whole
    stop = whole[12:16]  # the model is random: its text is not words
    cut = whole[: whole.index(stop)]
    c = greedy(client, prompt=PROMPT, max_tokens=32, stop=[stop, "never-happens"])
    assert c.choices[0].text == cut and c.choices[0].finish_reason == "stop"
    streamed = greedy(client, prompt=PROMPT, max_tokens=32, stop=stop, stream=True)
    assert "".join(ch.choices[0].text for ch in streamed) == cut


def test_stop_token_ids_end_the_completion_even_with_ignore_eos(client):
    """vLLM's stop_token_ids: accepted and ignored before."""
    ids = fusor_generate(prompt_ids(), 12)["output_ids"]
    k = next(i for i in range(2, len(ids)) if ids[i] not in ids[:i])
    c = greedy(client, prompt=PROMPT, max_tokens=12, extra_body={"ignore_eos": True, "stop_token_ids": [ids[k]]})
    assert c.choices[0].finish_reason == "stop" and c.usage.completion_tokens == k + 1


def test_seed_reproduces_a_sample(client):
    def sample(seed):
        return client.completions.create(model="llama", prompt=PROMPT, max_tokens=24, temperature=1.0, seed=seed,
                                         extra_body={"ignore_eos": True}).choices[0].text
    first = sample(42)
    assert sample(42) == first
    assert any(sample(s) != first for s in (43, 44, 45))


def test_max_tokens_and_eos(client):
    c = greedy(client, prompt=PROMPT, max_tokens=3)
    assert c.choices[0].finish_reason == "length" and c.usage.completion_tokens == 3
    # Without max_tokens a completion has 16, as OpenAI's and vLLM's (it ran to the context's end).
    c = client.completions.create(model="llama", prompt=PROMPT, temperature=0, extra_body={"ignore_eos": True})
    assert c.usage.completion_tokens == 16


@pytest.mark.parametrize("kw, field", [
    ({"n": 2}, "n"),
    ({"best_of": 2}, "best_of"),
    ({"logprobs": 1}, "logprobs"),
    ({"echo": True}, "echo"),
    ({"suffix": "x"}, "suffix"),
    ({"frequency_penalty": 0.5}, "frequency_penalty"),
    ({"logit_bias": {"5": 1}}, "logit_bias"),
    ({"extra_body": {"min_tokens": 4}}, "min_tokens"),  # vLLM's, silently ignored before
    ({"extra_body": {"include_stop_str_in_output": True}}, "include_stop_str_in_output"),
    ({"extra_body": {"stop_token_ids": [-1]}}, "stop_token_ids"),
    # More of vLLM's: ignored before, so a client moving from vLLM got unconstrained text.
    ({"extra_body": {"guided_choice": ["yes", "no"]}}, "guided_choice"),
    ({"extra_body": {"bad_words": ["x"]}}, "bad_words"),
    ({"extra_body": {"min_p": 0.5}}, "min_p"),
    ({"extra_body": {"use_beam_search": True}}, "use_beam_search"),
])
def test_refusals(client, kw, field):
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="llama", prompt=PROMPT, max_tokens=4, **kw)
    assert e.value.status_code == 400 and field in e.value.message
    assert e.value.body["param"] == field and e.value.body["type"] == "invalid_request_error"


@pytest.mark.parametrize("extra, field", [
    ({"continue_final_message": True}, "continue_final_message"),
    ({"chat_template": "{{ messages[0].content }}"}, "chat_template"),
    ({"chat_template_kwargs": {"enable_thinking": False}}, "chat_template_kwargs"),
])
def test_chat_template_extensions_not_implemented_are_refused(client, extra, field):
    """vLLM's chat extensions were ignored: the client got the default template's text with a 200."""
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="llama", messages=[{"role": "user", "content": "hi"}], max_tokens=2,
                                       extra_body=extra)
    assert e.value.body["param"] == field, e.value.body


def test_add_generation_prompt_false_leaves_the_assistants_turn_out(client):
    messages = [{"role": "user", "content": "hi"}]
    with_turn = client.chat.completions.create(model="llama", messages=messages, max_tokens=1, temperature=0)
    without = client.chat.completions.create(model="llama", messages=messages, max_tokens=1, temperature=0,
                                             extra_body={"add_generation_prompt": False})
    assert without.usage.prompt_tokens < with_turn.usage.prompt_tokens, (without.usage, with_turn.usage)


def test_streamed_events_are_ascii_so_a_charset_less_stream_decodes_the_same(server, client):
    """The stream is a bare text/event-stream, and Python's requests reads a text/* body without a
    charset as Latin-1: "\u00ef\u00bf\u00bd" arrived for U+FFFD. Non-ASCII now travels as \\u escapes."""
    whole = greedy(client, prompt="Once upon a time", max_tokens=16).choices[0].text
    assert not whole.isascii(), whole  # this prompt's greedy text holds non-ASCII
    body = json.dumps({"model": "llama", "prompt": "Once upon a time", "max_tokens": 16, "temperature": 0,
                       "stream": True, "ignore_eos": True}).encode()
    req = urllib.request.Request(f"http://{server.url}/v1/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        raw = r.read()
    assert raw.isascii()
    text = raw.decode("latin-1")  # what a client that assumes no charset decodes
    events = [json.loads(line[len("data: "):]) for line in text.split("\n") if line.startswith("data: {")]
    assert "".join(e["choices"][0]["text"] for e in events if e["choices"]) == whole


def test_a_temperature_near_zero_is_greedy(client):
    """1e-40 divided the logits past float's range and every probability became NaN: the draw
    returned the least likely token. 1e-300 rounded to 0 in float and was refused."""
    expected = greedy(client, prompt=PROMPT, max_tokens=12).choices[0].text
    for t in (1e-40, 1e-300):
        c = client.completions.create(model="llama", prompt=PROMPT, max_tokens=12, temperature=t, seed=0,
                                      extra_body={"ignore_eos": True})
        assert c.choices[0].text == expected, t


def test_chat_content_parts_are_strings_or_text_objects_joined_by_newlines(client):
    """As vLLM joins them; bare strings were refused before."""
    parts = [{"role": "user", "content": ["Tell me", {"type": "text", "text": "one."}]}]
    plain = [{"role": "user", "content": "Tell me\none."}]
    a = client.chat.completions.create(model="llama", messages=parts, max_tokens=8, temperature=0)
    b = client.chat.completions.create(model="llama", messages=plain, max_tokens=8, temperature=0)
    assert a.choices[0].message.content == b.choices[0].message.content
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(model="llama", messages=[{"role": "user", "content": [{"type": "text", "text": 5}]}],
                                       max_tokens=4)
    assert "messages[0].content[0].text" in e.value.message


def test_chat_refusals(client):
    msg = [{"role": "user", "content": "Hi"}]
    for kw in ({"logprobs": True}, {"n": 3}, {"response_format": {"type": "json_object"}},
               {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]},
               {"tool_choice": "required"}, {"tool_choice": {"type": "function", "function": {"name": "f"}}}):
        with pytest.raises(openai.BadRequestError):
            client.chat.completions.create(model="llama", messages=msg, max_tokens=4, **kw)
    # Without tools, "none" and "auto" ask for nothing more than text.
    assert client.chat.completions.create(model="llama", messages=msg, max_tokens=2, tool_choice="none").choices


def test_too_long_prompt_and_unknown_model(client):
    # Prompt + completion within the context (512), as vLLM: 511 tokens leave one, 512 none.
    c = greedy(client, prompt=[5] * 511)
    assert c.usage.completion_tokens == 1 and c.choices[0].finish_reason == "length"
    for n in (512, 600):
        with pytest.raises(openai.BadRequestError) as e:
            client.completions.create(model="llama", prompt=[5] * n, max_tokens=4)
        assert "512" in e.value.message and f"{n} tokens" in e.value.message
        assert e.value.body["code"] == "context_length_exceeded"  # OpenAI's: clients shorten and retry on it
    with pytest.raises(openai.BadRequestError) as e:
        client.completions.create(model="llama", prompt=[5] * 500, max_tokens=20)
    assert "512" in e.value.message and "520" in e.value.message
    assert e.value.body["code"] == "context_length_exceeded" and e.value.body["param"] == "max_tokens"
    with pytest.raises(openai.NotFoundError) as e:
        client.completions.create(model="nope", prompt="Hi", max_tokens=4)
    assert e.value.body["code"] == "model_not_found"


def test_traffic_class(client):
    c = greedy(client, prompt=PROMPT, max_tokens=4, extra_body={"fusor_class": "default"})
    assert c.usage.completion_tokens == 4
    with pytest.raises(openai.BadRequestError) as e:
        greedy(client, prompt=PROMPT, max_tokens=4, extra_body={"fusor_class": "no-such-class"})
    assert "no-such-class" in e.value.message


def test_bad_bodies_get_openai_errors(server):
    for body in (b"{", b"[1]", b'{"model": "llama", "prompt": "Hi", "max_tokens": "many"}',
                 b'{"model": "llama", "prompt": [[1, 2], [3]]}', b'{"model": "llama", "messages": "hi"}'):
        for path in ("/v1/completions", "/v1/chat/completions"):
            status, out = post(server.url + path, body, {"Content-Type": "application/json"})
            assert status == 400, (path, body, out)
            assert set(json.loads(out)["error"]) == {"message", "type", "param", "code"}
    # Nested 200,000 deep (a 400 KB body): parsed, then copied recursively, it overflowed the stack
    # of the thread that copied it and killed the server.
    deep = b"[" * 200000 + b"]" * 200000
    for path, body in (("/v1/completions", b'{"model": "llama", "prompt": "Hi", "stop": ' + deep + b"}"),
                       ("/v1/chat/completions", b'{"model": "llama", "messages": [], "max_tokens": ' + deep + b"}"),
                       ("/v2/models/llama/generate", b'{"text_input": "Hi", "unused": ' + deep + b"}")):
        status, out = post(server.url + path, body, {"Content-Type": "application/json"})
        assert status == 400 and b"nests deeper than 128 levels" in out, (path, status, out[:200])
    # A wrong method is 405 naming the right one (vLLM's answer), an unknown /v1 path 404, both in
    # OpenAI's shape.
    for method, path, allowed in (("GET", "/v1/completions", "POST"), ("DELETE", "/v1/chat/completions", "POST"),
                                  ("POST", "/v1/models", "GET")):
        request = urllib.request.Request(f"http://{server.url}{path}", data=b"{}" if method == "POST" else None,
                                         method=method)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(request, timeout=30)
        assert e.value.code == 405 and e.value.headers["Allow"] == allowed, (method, path)
        assert set(json.loads(e.value.read())["error"]) == {"message", "type", "param", "code"}
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(f"http://{server.url}/v1/embeddings", timeout=30)
    assert e.value.code == 404 and "/v1/embeddings" in json.loads(e.value.read())["error"]["message"]
    # A gzip body is bounded once inflated (64 MiB by default), not as sent: ~65 KB inflating past it.
    bomb = gzip.compress(b'{"model": "llama", "prompt": "' + b"a" * (65 << 20) + b'"}', 1)
    for path in ("/v1/completions", "/v2/models/llama/generate"):
        status, out = post(server.url + path, bomb, {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        assert status == 400 and b"once inflated" in out, (path, out[:200])


def test_triton_generate_and_stream(server, client):
    expected = greedy(client, prompt=PROMPT, max_tokens=16).choices[0].text
    body = {"text_input": PROMPT, "max_tokens": 16, "parameters": {"temperature": 0, "ignore_eos": True}}
    status, out = post(server.url + "/v2/models/llama/generate", json.dumps(body).encode())
    assert status == 200, out
    assert json.loads(out) == {"model_name": "llama", "model_version": "1", "text_output": expected}
    status, out = post(server.url + "/v2/models/llama/versions/1/generate_stream", json.dumps(body).encode())
    assert status == 200, out
    events = [json.loads(e) for e in sse_events(out)]
    assert len(events) > 5 and all(e["model_name"] == "llama" for e in events)
    assert "".join(e["text_output"] for e in events) == expected
    # The vLLM backend's extra outputs, and the prompt kept in front.
    body["parameters"].update(return_finish_reason=True, return_num_output_tokens=True, exclude_input_in_output=False)
    status, out = post(server.url + "/v2/models/llama/generate", json.dumps(body).encode())
    j = json.loads(out)
    assert j["text_output"] == PROMPT + expected and j["finish_reason"] == "length" and j["num_output_tokens"] == 16
    # Errors in Triton's shape.
    status, out = post(server.url + "/v2/models/nope/generate", json.dumps(body).encode())
    assert status == 404 and isinstance(json.loads(out)["error"], str)
    status, out = post(server.url + "/v2/models/llama/generate", b'{"max_tokens": 3}')
    assert status == 400 and "text_input" in json.loads(out)["error"]
    with urllib.request.urlopen(f"http://{server.url}/v2") as r:
        assert "generate" in json.loads(r.read())["extensions"]


def test_greedy_equals_fusor_generate_while_16_streams_run(client):
    ids = prompt_ids("The little dog ran")
    expected = fusor_generate(ids, 24)["text"]

    def stream(seed):
        chunks = client.completions.create(model="llama", prompt=PROMPT, max_tokens=24, seed=seed, stream=True,
                                           extra_body={"ignore_eos": True})
        return sum(1 for c in chunks if c.choices and c.choices[0].text)

    with ThreadPoolExecutor(17) as pool:
        others = [pool.submit(stream, seed) for seed in range(16)]
        mine = pool.submit(lambda: greedy(client, prompt=ids, max_tokens=24).choices[0].text)
        assert mine.result() == expected
        assert all(f.result() > 0 for f in others)


def aborted_requests(server):
    """fusor:request_success_total{finished_reason="abort"} summed over classes."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics}/metrics") as r:
        text = r.read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("fusor:request_success_total{") and 'finished_reason="abort"' in line)


def metric_values(server, name):
    """The values of `name`'s samples at /metrics, by their label text."""
    with urllib.request.urlopen(f"http://127.0.0.1:{server.metrics}/metrics") as r:
        text = r.read().decode()
    return {line[len(name):].rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in text.splitlines() if line.startswith(name + "{")}


def test_the_pending_gauge_counts_a_decoders_requests(server, client):
    """fusor plan's autoscaler scales on nv_inference_pending_request_count, which had no sample for
    a decoder: the HPA of a served LLM never scaled."""
    with ThreadPoolExecutor(3) as pool:
        streams = [pool.submit(lambda: list(greedy(client, prompt=PROMPT, max_tokens=300, stream=True)))
                   for _ in range(3)]
        deadline = time.time() + 30
        while sum(v for k, v in metric_values(server, "nv_inference_pending_request_count").items()
                  if 'model="llama"' in k) < 3:
            assert time.time() < deadline and not all(f.done() for f in streams), "the gauge never counted the streams"
            time.sleep(0.05)
        for f in streams:
            f.result()
    pending = metric_values(server, "nv_inference_pending_request_count")
    assert pending and all(v == 0 for k, v in pending.items() if 'model="llama"' in k), pending


def post_then_leave(server, path, body, until):
    """POSTs `body` (a dict) over a raw socket, reads until `until` has come, closes the socket
    (a client that leaves) and returns what it read."""
    host, port = server.url.split(":")
    data = json.dumps(body).encode()
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
        got = b""
        while until not in got:
            chunk = s.recv(4096)
            assert chunk, got
            got += chunk
    return got


def wait_for_aborts(server, count, what):
    deadline = time.time() + 30
    while aborted_requests(server) < count:
        assert time.time() < deadline, what
        time.sleep(0.1)


def test_a_client_that_leaves_a_whole_answer_cancels_it(server, client):
    """Not streamed: once the first token is out the answer's headers come (a chunked 200), and a
    client that closes its socket then cancels the request instead of leaving it to run to its
    400 tokens; OpenAI's route and Triton's generate alike."""
    aborted = aborted_requests(server)
    for path, body in (("/v1/completions", {"model": "llama", "prompt": PROMPT, "max_tokens": 400,
                                            "ignore_eos": True, "temperature": 0}),
                       ("/v2/models/llama/generate", {"text_input": PROMPT, "max_tokens": 400, "ignore_eos": True})):
        got = post_then_leave(server, path, body, until=b"\r\n\r\n")
        assert got.startswith(b"HTTP/1.1 200") and b"chunked" in got.lower(), got
    wait_for_aborts(server, aborted + 2, "the abandoned requests were not cancelled")
    # Whole answers still read as before, with their usage.
    ids = prompt_ids()
    out = greedy(client, prompt=ids, max_tokens=12)
    assert out.choices[0].text == fusor_generate(ids, 12)["text"] and out.usage.completion_tokens == 12


def test_disconnect_mid_stream_leaves_the_server_healthy(server, client):
    aborted = aborted_requests(server)
    body = {"model": "llama", "prompt": PROMPT, "max_tokens": 400, "stream": True, "ignore_eos": True, "temperature": 0}
    for _ in range(3):
        assert post_then_leave(server, "/v1/completions", body, until=b"data: ").startswith(b"HTTP/1.1 200")
    # Each closed stream is cancelled (not run to its 400 tokens): the scheduler counts an abort.
    wait_for_aborts(server, aborted + 3, "the disconnected streams were not cancelled")
    # The server goes on answering, and greedy answers are unchanged.
    ids = prompt_ids()
    assert greedy(client, prompt=ids, max_tokens=12).choices[0].text == fusor_generate(ids, 12)["text"]
    with urllib.request.urlopen(f"http://{server.url}/health") as r:
        assert r.status == 200
