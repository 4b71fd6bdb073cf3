"""fusor's side of bench/compare-generate-serving: the closed-loop load of
bench/genai_peers/closed_loop.py, sent to `fusor serve` over its OpenAI-compatible streaming
POST /v1/completions (the project venv's aiohttp).

Each request: {"model", "prompt": [ids], "max_tokens": N, "stream": true, "ignore_eos": true,
"temperature": 0, "stream_options": {"include_usage": true}}; the reply is server-sent events,
`data: {json}` lines ending in `data: [DONE]`. A chunk with choices is one token's text (its arrival
is that token's time); the generated-token count is usage.completion_tokens when the server sends
it, else the number of such chunks. Results have the drivers' shape, with "text" in place of
"output_ids" (the API returns text).
"""
import asyncio
import json
import time


class ServerError(RuntimeError):
    pass


async def _one(session, url, body, rec, t0):
    rec["submit_s"] = time.perf_counter() - t0
    chunks, usage, text = 0, None, []
    async with session.post(url, json=body) as resp:
        if resp.status != 200:
            raise ServerError(f"POST {url}: HTTP {resp.status}: {(await resp.text())[:300]}")
        async for raw in resp.content:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:"):
                continue
            data = line[len("data:"):].strip()
            if data == "[DONE]":
                break
            try:
                msg = json.loads(data)
            except ValueError as ex:
                raise ServerError(f"POST {url}: a stream line is not JSON: {data[:200]}") from ex
            if "error" in msg:
                raise ServerError(f"POST {url}: {msg['error']}")
            if msg.get("usage"):
                usage = msg["usage"]
            if msg.get("choices"):
                t = time.perf_counter() - t0
                if rec["first_token_s"] is None:
                    rec["first_token_s"] = t
                rec["last_token_s"] = t
                chunks += 1
                text.append(msg["choices"][0].get("text") or "")
    if rec["first_token_s"] is None:
        raise ServerError(f"POST {url}: the stream ended without a token")
    rec["tokens"] = usage["completion_tokens"] if usage and "completion_tokens" in usage else chunks
    rec["text"] = "".join(text)


async def _level(base_url, model, prompts, concurrency, max_new_tokens):
    import aiohttp
    url = base_url.rstrip("/") + "/v1/completions"
    records = [{"submit_s": None, "first_token_s": None, "last_token_s": None, "tokens": 0, "text": ""}
               for _ in prompts]
    waiting = list(range(len(prompts)))[::-1]
    t0 = time.perf_counter()

    async def client(session):
        while waiting:
            i = waiting.pop()
            body = {"model": model, "prompt": prompts[i], "max_tokens": max_new_tokens,
                    "stream": True, "ignore_eos": True, "temperature": 0,
                    "stream_options": {"include_usage": True}}
            await _one(session, url, body, records[i], t0)

    timeout = aiohttp.ClientTimeout(total=None, sock_read=600)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:
        await asyncio.gather(*(client(session) for _ in range(min(concurrency, len(prompts)))))
    return {"concurrency": concurrency, "wall_s": time.perf_counter() - t0, "requests": records}


def run_job(base_url, model, job):
    """job as closed_loop.py's (model and threads unused: the server has them); returns the levels."""
    results = []
    for spec in job["levels"]:
        if job.get("warmup"):
            asyncio.run(_level(base_url, model, job["warmup"], spec["concurrency"], job["max_new_tokens"]))
        results.append(asyncio.run(_level(base_url, model, spec["prompts"], spec["concurrency"],
                                          job["max_new_tokens"])))
    return results
