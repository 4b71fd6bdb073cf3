"""Open-loop load for bench/serve-peers: requests arrive at a fixed mean rate, whatever the server does.

    python open_loop.py URL BODIES.tsv --rate 80 --duration 15 --warmup 3 --seed 0

wrk is closed loop (a connection sends its next request when the previous answer arrives), so a
slow server also slows its load. Here the arrival times are drawn first: a Poisson process
(exponential gaps, seeded) at --rate per second for --warmup + --duration seconds, the bodies
taken in turn from BODIES.tsv ("LENGTH<TAB>JSON" per line, as infer.lua reads them). Each arrival
is POSTed at its time on an idle keep-alive connection, or on a new one when all are busy (at
most --max-connections; past that it waits for one). Its latency runs from its scheduled time to
the last byte of the answer, so time spent waiting for a connection or behind a late client
counts too (no coordinated omission). Arrivals in the first --warmup s are not recorded.

Prints one JSON line: requests (recorded arrivals answered), offered and achieved rate, useful
tokens/s (the recorded requests' lengths over --duration), latency p50/p90/p99/max in ms, and
the counts of non-200 answers and failed requests (timeout, connection error).
"""
import argparse
import asyncio
import json
import random
import sys
import time
from urllib.parse import urlsplit


def percentile(sorted_values, q):
    """The nearest-rank percentile, as wrk's histogram gives it."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(q / 100 * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


class Connection:
    def __init__(self, reader, writer):
        self.reader, self.writer = reader, writer

    async def post(self, head, body):
        """Sends one request; returns (status, keep_alive) after reading the whole answer."""
        self.writer.write(head + body)
        await self.writer.drain()
        status_line = await self.reader.readuntil(b"\r\n")
        status = int(status_line.split()[1])
        length, chunked, keep_alive = None, False, not status_line.startswith(b"HTTP/1.0")
        while True:
            line = await self.reader.readuntil(b"\r\n")
            if line == b"\r\n":
                break
            name, _, value = line.decode("latin-1").partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "transfer-encoding" and "chunked" in value:
                chunked = True
            elif name == "connection":
                keep_alive = value != "close"
        if chunked:
            while True:
                size = int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16)
                await self.reader.readexactly(size + 2)
                if size == 0:
                    break
        elif length is not None:
            await self.reader.readexactly(length)
        else:
            await self.reader.read()
            keep_alive = False
        return status, keep_alive

    def close(self):
        self.writer.close()


async def run(a):
    url = urlsplit(a.url)
    host, port, path = url.hostname, url.port or 80, url.path
    bodies = []
    with open(a.bodies, "rb") as f:
        for line in f:
            n, _, body = line.rstrip(b"\n").partition(b"\t")
            bodies.append((int(n), body))
    if not bodies:
        raise SystemExit(f"open_loop: {a.bodies} has no bodies")

    rng = random.Random(a.seed)
    arrivals, t = [], 0.0
    while True:
        t += rng.expovariate(a.rate)
        if t >= a.warmup + a.duration:
            break
        arrivals.append(t)

    idle, open_count = [], 0
    freed = asyncio.Condition()
    latencies, tokens, non200, failed = [], 0, 0, 0

    async def acquire():
        nonlocal open_count
        async with freed:
            while not idle and open_count >= a.max_connections:
                await freed.wait()
            if idle:
                return idle.pop()
            open_count += 1
        try:
            return Connection(*await asyncio.open_connection(host, port))
        except OSError:
            async with freed:
                open_count -= 1
                freed.notify()
            raise

    async def release(conn, keep):
        nonlocal open_count
        async with freed:
            if keep:
                idle.append(conn)
            else:
                conn.close()
                open_count -= 1
            freed.notify()

    async def one(i, scheduled, start):
        nonlocal tokens, non200, failed
        length, body = bodies[i % len(bodies)]
        head = (f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        recorded = scheduled >= a.warmup
        conn = None
        try:
            conn = await acquire()
            status, keep = await asyncio.wait_for(conn.post(head, body), timeout=a.timeout)
            end = time.perf_counter()
            await release(conn, keep)
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, ValueError, IndexError):
            if conn is not None:
                await release(conn, False)
            if recorded:
                failed += 1
            return
        if not recorded:
            return
        if status != 200:
            non200 += 1
            return
        latencies.append(end - (start + scheduled))
        tokens += length

    start = time.perf_counter()
    tasks = []
    for i, at in enumerate(arrivals):
        delay = start + at - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(i, at, start)))
    await asyncio.gather(*tasks)
    for conn in idle:
        conn.close()

    latencies.sort()
    recorded = sum(1 for t in arrivals if t >= a.warmup)
    ms = lambda q: percentile(latencies, q) * 1e3
    print(json.dumps({
        "requests": len(latencies), "offered": recorded, "seconds": a.duration,
        "offered_per_s": recorded / a.duration, "requests_per_s": len(latencies) / a.duration,
        "tokens_per_s": tokens / a.duration, "mean_length": tokens / len(latencies) if latencies else 0.0,
        "latency_ms": {"p50": ms(50), "p90": ms(90), "p99": ms(99), "max": latencies[-1] * 1e3 if latencies else float("nan")},
        "non200": non200, "failed": failed, "max_open_connections": a.max_connections}), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("bodies")
    p.add_argument("--rate", type=float, required=True, help="mean arrivals per second")
    p.add_argument("--duration", type=float, required=True, help="recorded seconds")
    p.add_argument("--warmup", type=float, default=0.0, help="unrecorded seconds first")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per request")
    p.add_argument("--max-connections", type=int, default=256)
    a = p.parse_args()
    if a.rate <= 0 or a.duration <= 0 or a.warmup < 0 or a.timeout <= 0 or a.max_connections < 1:
        p.error("--rate, --duration, --timeout and --max-connections must be positive, --warmup >= 0")
    asyncio.run(run(a))


if __name__ == "__main__":
    sys.exit(main())
