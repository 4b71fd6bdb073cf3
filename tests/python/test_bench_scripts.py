"""The benchmarks of the fusor package (bench/python-overhead) start with the installed package:
`--help` imports what the script imports and parses its arguments."""
import os
import subprocess
import sys

import pytest

from bench_scripts import python_benches


@pytest.mark.parametrize("path", list(python_benches(needs_package=True)), ids=lambda p: p.name)
def test_package_bench_script_starts(path):
    env = dict(os.environ, FUSOR_PYTHON=sys.executable)
    r = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage:" in r.stdout, r.stdout[:500]
