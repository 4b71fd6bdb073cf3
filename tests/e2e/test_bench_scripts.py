"""Every Python benchmark in bench/ still starts: `--help` imports what the script imports and
parses its arguments. bench/serve-generate-classes once imported a module that a later commit
removed, and nothing ran it until someone needed its numbers."""
import subprocess

import pytest

from conftest import ROOT


def python_benches():
    for path in sorted((ROOT / "bench").iterdir()):
        if path.is_file() and path.stat().st_mode & 0o111:
            with open(path, "rb") as f:
                head = f.read(400)
            if b"venv/bin/python" in head:
                yield path.name


@pytest.mark.parametrize("name", list(python_benches()))
def test_bench_script_starts(name):
    r = subprocess.run([str(ROOT / "bench" / name), "--help"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "usage:" in r.stdout, r.stdout[:500]


def test_every_python_bench_is_found():
    assert {"compare-generate-serving", "serve-generate-classes", "serve-peers"} <= set(python_benches())
