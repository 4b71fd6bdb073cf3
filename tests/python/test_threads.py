"""run() releases the GIL and gives each concurrent call its own execution context."""
import threading
import time

import numpy as np

import fusor
from conftest import minilm_feed


def test_eight_threads_match_serial_runs(minilm):
    session = fusor.InferenceSession(minilm)
    feeds = [minilm_feed(1, 8 + (i % 3), seed=i) for i in range(8)]  # 3 shapes, shared by threads
    serial = [session.run(None, f)[0] for f in feeds]
    results = [None] * 8 * 3
    start = threading.Barrier(8)
    errors = []

    def work(i):
        try:
            start.wait()
            for r in range(3):
                results[r * 8 + i] = session.run(None, feeds[i])[0]
        except Exception as e:  # noqa: BLE001 - reported below, in the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k, got in enumerate(results):
        np.testing.assert_array_equal(got, serial[k % 8])
    info = session.plan_cache_info()
    assert info["shapes"] == 3 and info["contexts"] >= 3


def test_run_releases_the_gil(minilm):
    """While one thread runs the model, the main thread keeps running Python: the longest pause
    it sees is far shorter than the run (were the GIL held, it would be the whole run)."""
    from fusor import _fusor
    before = _fusor.compute_threads()
    _fusor.set_compute_threads(1)  # leaves a core to the main thread on a 2-core machine
    try:
        session = fusor.InferenceSession(minilm)
        feed = minilm_feed(4, 128)
        session.run(None, feed)
        started, done = threading.Event(), threading.Event()
        span = []

        def runner():
            started.set()
            t0 = time.perf_counter()
            session.run(None, feed)
            span.append(time.perf_counter() - t0)
            done.set()

        t = threading.Thread(target=runner)
        t.start()
        started.wait()
        last, longest = time.perf_counter(), 0.0
        while not done.is_set():
            now = time.perf_counter()
            longest, last = max(longest, now - last), now
        t.join()
    finally:
        _fusor.set_compute_threads(before)
    assert span[0] > 0.02, "the run is too short to tell"
    assert longest < span[0] / 2, f"main thread paused {longest:.3f} s during a {span[0]:.3f} s run"
