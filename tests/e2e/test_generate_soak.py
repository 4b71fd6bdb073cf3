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


async def stream(session, url, body, drop_after=None):
    """Returns ("done", tokens), ("dropped", tokens) or ("http", status)."""
    tokens = 0
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
                return "done", tokens
            msg = json.loads(data)
            assert "error" not in msg, msg
            if msg.get("choices"):
                tokens += 1
                if drop_after is not None and tokens >= drop_after:
                    resp.close()  # the client goes away mid-stream
                    return "dropped", tokens
    return "ended without [DONE]", tokens


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
                    "max_tokens": rng.randint(8, 48), "stream": True, "ignore_eos": True, "temperature": 0,
                    "fusor_class": rng.choice(["interactive", "batch"])}
            jobs.append(stream(session, url, body, drop_after=rng.randint(1, 6) if kind == "drop" else None))
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
                assert status in ("dropped", "done"), status
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
            jobs = [asyncio.create_task(stream(session, url, {
                "model": "llama", "prompt": [5 + i, 6, 7, 8], "max_tokens": 120, "stream": True,
                "ignore_eos": True, "temperature": 0})) for i in range(6)]
            await asyncio.sleep(0.5)  # every stream has started
            served.proc.send_signal(15)
            return await asyncio.gather(*jobs)

    results = asyncio.run(run())
    assert results == [("done", 120)] * 6
    assert served.proc.wait(timeout=60) == 0
