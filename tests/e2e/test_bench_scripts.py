"""Every Python benchmark in bench/ still starts: `--help` imports what the script imports and
parses its arguments. bench/serve-generate-classes once imported a module that a later commit
removed, and nothing ran it until someone needed its numbers. The benchmarks of the fusor package
start in tests/python, where it is installed."""
import subprocess

import pytest

from bench_scripts import python_benches


@pytest.mark.parametrize("path", list(python_benches(needs_package=False)), ids=lambda p: p.name)
def test_bench_script_starts(path):
    r = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage:" in r.stdout, r.stdout[:500]


def test_every_python_bench_is_found():
    names = {p.name for p in python_benches(needs_package=False)}
    assert {"compare-generate-serving", "serve-generate-classes", "serve-peers"} <= names
    assert "python-overhead" in {p.name for p in python_benches(needs_package=True)}
