"""Generative serving under abuse (issue #17): many concurrent streams of two classes, a third of
them dropped by their client mid-stream, oversize prompts among them. Afterwards the KV cache's
pool is empty, nothing runs or waits, and the server's counters account for every request sent.
Then SIGTERM while streams run: each of them still ends with [DONE], and the server exits 0."""
import asyncio
import json
import random
import re
import urllib.request

import pytest

from serve_util import Served

LLAMA = "models/llama-tiny"
CONFIG = """serve:
  default_class: interactive
  max_sequences: 8
  step_tokens: 64
  kv_cache_tokens: 512
  classes:
    interactive: {priority: 0}
    batch: {priority: 1, prefill_chunk: 32}
"""


def metrics(served):
    with urllib.request.urlopen(f"http://127.0.0.1:{served.metrics}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(fusor:[a-z_]+)\{([^}]*)\} ([0-9.e+-]+)$', line)
        if m and not m.group(1).endswith(("_bucket", "_sum")):
            out.setdefault(m.group(1), []).append((m.group(2), float(m.group(3))))
    return out


def total(m, name, label=""):
    return sum(v for labels, v in m.get(name, []) if label in labels)


async def stream(session, url, body):
    """Returns ("done", usage.completion_tokens) or ("http", status)."""
    usage = None
    body = dict(body, stream_options={"include_usage": True})
    async with session.post(url, json=body) as resp:
        if resp.status != 200:
            await resp.read()
            return "http", resp.status
        async for raw in resp.content:
            line = raw.decode().strip()
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return "done", usage
            msg = json.loads(data)
            assert "error" not in msg, msg
            if msg.get("usage"):
                usage = msg["usage"]["completion_tokens"]
    return "ended without [DONE]", usage


async def dropped_stream(url, body, after):
    """Reads `after` events of a stream over a raw socket, then closes it: a client that leaves."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    payload = json.dumps(body).encode()
    writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    got = b""
    while got.count(b"data: ") < after:
        chunk = await reader.read(4096)
        if not chunk:
            break
        got += chunk
    writer.transport.abort()
    return ("dropped", after) if got.startswith(b"HTTP/1.1 200") else ("http", got[:40])


async def soak(base, n, seed):
    import aiohttp
    rng = random.Random(seed)
    url = base + "/v1/completions"
    timeout = aiohttp.ClientTimeout(total=300)
    async with aiohttp.ClientSession(timeout=timeout, connector=aiohttp.TCPConnector(limit=0)) as session:
        jobs, kinds = [], []
        for i in range(n):
            kind = rng.choice(["complete", "complete", "drop", "oversize"])
            length = 600 if kind == "oversize" else rng.randint(4, 120)
            body = {"model": "llama", "prompt": [3 + (i * 31 + k) % 8000 for k in range(length)],
                    # a dropped stream is long, so its client leaves while it still runs
                    "max_tokens": 300 if kind == "drop" else rng.randint(8, 48), "stream": True, "ignore_eos": True, "temperature": 0,
                    "fusor_class": rng.choice(["interactive", "batch"])}
            jobs.append(dropped_stream(url, body, rng.randint(1, 6)) if kind == "drop" else stream(session, url, body))
            kinds.append((kind, body["max_tokens"]))
        return kinds, await asyncio.gather(*jobs)


def test_soak_frees_the_pool_and_accounts_for_every_request(tmp_path):
    served = Served(tmp_path, CONFIG, [("llama", LLAMA)])
    try:
        kinds, results = asyncio.run(soak(f"http://{served.url}", 48, seed=7))
        for (kind, max_tokens), (status, value) in zip(kinds, results):
            if kind == "oversize":
                assert (status, value) == ("http", 400)
            elif kind == "complete":
                assert (status, value) == ("done", max_tokens)
            else:
                assert status == "dropped", (status, value)
        m = metrics(served)
        for _ in range(50):  # cancels land at the next step boundary
            if total(m, "fusor:num_requests_running") == 0:
                break
            asyncio.run(asyncio.sleep(0.1))
            m = metrics(served)
        assert total(m, "fusor:num_requests_running") == 0
        assert total(m, "fusor:num_requests_waiting") == 0
        assert total(m, "fusor:kv_cache_usage_perc") == 0
        finished = total(m, "fusor:request_success_total")
        refused = total(m, "fusor:request_failure_total", 'reason="bad_request"')
        assert finished + refused == len(kinds), (finished, refused)
        assert refused == sum(1 for k, _ in kinds if k == "oversize")
        assert total(m, "fusor:request_success_total", 'finished_reason="abort"') >= 1
        assert total(m, "fusor:num_preemptions_total") >= 0
    finally:
        assert served.stop() == 0


def test_sigterm_drains_every_running_stream(tmp_path):
    served = Served(tmp_path, CONFIG, [("llama", LLAMA)])

    async def run():
        import aiohttp
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
            url = f"http://{served.url}/v1/completions"
            lengths = [120] * 5 + [480]  # the long one keeps the drain going while health is asked
            jobs = [asyncio.create_task(stream(session, url, {
                "model": "llama", "prompt": [5 + i, 6, 7, 8], "max_tokens": n, "stream": True,
                "ignore_eos": True, "temperature": 0})) for i, n in enumerate(lengths)]
            await asyncio.sleep(0.5)  # every stream has started
            served.proc.send_signal(15)
            # Draining: not ready, said as 503 with an error body (a load balancer stops sending).
            health = None
            for _ in range(100):
                async with session.get(f"http://{served.url}/health") as resp:
                    if resp.status != 200:
                        health = resp.status, json.loads(await resp.text())
                        break
                await asyncio.sleep(0.02)
            return health, await asyncio.gather(*jobs)

    health, results = asyncio.run(run())
    assert health and health[0] == 503 and "error" in health[1], health
    assert results == [("done", 120)] * 5 + [("done", 480)]
    assert served.proc.wait(timeout=60) == 0


def test_streams_are_not_compressed_for_clients_that_accept_gzip(tmp_path):
    """aiohttp, requests and the openai client send Accept-Encoding: gzip; a gzipped event stream
    reaches them only when it ends, which makes every token arrive at once."""
    import http.client
    served = Served(tmp_path, CONFIG, [("llama", LLAMA)])
    try:
        host, port = served.url.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        body = json.dumps({"model": "llama", "prompt": [5, 6, 7], "max_tokens": 4, "stream": True})
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json", "Accept-Encoding": "gzip, deflate"})
        resp = conn.getresponse()
        assert resp.status == 200
        assert resp.getheader("Content-Type") == "text/event-stream"
        assert resp.getheader("Content-Encoding") in (None, "identity")
        assert resp.read().decode().rstrip().endswith("data: [DONE]")
        conn.close()
    finally:
        assert served.stop() == 0


def test_a_stream_that_times_out_in_the_queue_is_a_503(tmp_path):
    """The stream's 200 and headers went out before admission, so a queue timeout came as an error
    event of a successful response (tritonclient and genai-perf counted a success)."""
    served = Served(tmp_path, """serve:
  default_class: interactive
  max_sequences: 2
  step_tokens: 64
  kv_cache_tokens: 512
  classes:
    interactive: {priority: 0}
    batch: {priority: 1, timeout_ms: 100}
""", [("llama", LLAMA)])

    async def ask(session, url, body):
        async with session.post(url, json=body) as resp:
            return resp.status, await resp.text()

    async def run():
        import aiohttp
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=300)) as session:
            base = f"http://{served.url}"
            # Two long streams hold both places (500 tokens each, longer still as they preempt
            # each other in the 512-token pool) well past the batch class's 100 ms timeout, on a
            # fast host too: 400 tokens of a 2-row decode once ended before a second request,
            # sent after the first one's answer, had waited out a 300 ms timeout.
            busy = [asyncio.create_task(stream(session, base + "/v1/completions", {
                "model": "llama", "prompt": [5 + i, 6, 7], "max_tokens": 500, "stream": True, "ignore_eos": True}))
                for i in range(2)]
            await asyncio.sleep(0.1)  # both sequences run: the batch class waits past its timeout
            asks = []
            for path, body in (("/v2/models/llama/generate_stream", {"text_input": "Hi", "max_tokens": 5}),
                               ("/v1/completions", {"model": "llama", "prompt": "Hi", "max_tokens": 5, "stream": True})):
                body = dict(body, parameters={"class": "batch"}) if "text_input" in body else dict(body, fusor_class="batch")
                asks.append(ask(session, base + path, body))
            answers = await asyncio.gather(*asks)
            await asyncio.gather(*busy)
            return answers

    try:
        for status, text in asyncio.run(run()):
            assert status == 503 and "timeout" in text, (status, text)
    finally:
        assert served.stop() == 0, served.output()
