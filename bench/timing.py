"""The timing loop every engine in bench/compare-ort is measured with, the same as `fusor bench`'s.

Standard library only: the OpenVINO worker imports it from its own venv.
"""
import time


def percentile(v, p):
    """Nearest-rank percentile, as fusor bench computes it."""
    s = sorted(v)
    i = -(-p * len(s) // 100)  # ceil
    return s[min(len(s) - 1, max(0, int(i) - 1))]


def time_runs(run, batch, seconds, warmup):
    """warmup untimed calls of run(), then timed calls until seconds have passed (at least 5).

    Returns {"batch", "runs", "throughput_per_s" (inferences/s = batch * runs / seconds),
    "latency_ms": {"p50", "p90", "p99"}}."""
    for _ in range(warmup):
        run()
    lat = []
    start = time.perf_counter()
    elapsed = 0.0
    while elapsed < seconds or len(lat) < 5:
        t0 = time.perf_counter()
        run()
        t1 = time.perf_counter()
        lat.append((t1 - t0) * 1e3)
        elapsed = t1 - start
    return {"batch": batch, "runs": len(lat), "throughput_per_s": batch * len(lat) / elapsed,
            "latency_ms": {"p50": percentile(lat, 50), "p90": percentile(lat, 90),
                           "p99": percentile(lat, 99)}}
