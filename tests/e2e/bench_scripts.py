"""The Python benchmarks in bench/: executable files that re-execute themselves with a venv's Python.
Those that import the fusor package run in the venv make test-python builds (build-python-venv),
so tests/python checks them; tests/e2e checks the rest."""
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
PACKAGE_VENV = b"build-python-venv/bin/python"


def python_benches(needs_package):
    for path in sorted(BENCH.iterdir()):
        if path.is_file() and path.stat().st_mode & 0o111:
            with open(path, "rb") as f:
                head = f.read(400)
            if b"venv/bin/python" in head and (PACKAGE_VENV in head) == needs_package:
                yield path
