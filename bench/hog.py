"""A process that keeps one CPU busy while compare-ort measures (--hog): a noisy neighbour.

It spins in a Python busy loop pinned to one CPU, from before the first round until the end.
The context manager kills it on every way out (error, Ctrl-C, SIGTERM turned into SystemExit by
the caller); should the parent die without cleaning up (SIGKILL), the hog notices that it was
re-parented and exits within a fraction of a second.
"""
import os
import subprocess
import sys

SPIN = """
import os, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which kills us
os.sched_setaffinity(0, {int(sys.argv[1])})
parent = int(sys.argv[2])
while os.getppid() == parent:
    for _ in range(200000):
        pass
"""


class Hog:
    def __init__(self, cpu=None):
        allowed = sorted(os.sched_getaffinity(0))
        self.cpu = allowed[-1] if cpu is None else cpu
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", SPIN, str(self.cpu), str(os.getpid())],
                                     stdin=subprocess.DEVNULL)
        return self

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def __exit__(self, *exc):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
        return False
