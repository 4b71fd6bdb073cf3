import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))
FUSOR = os.environ.get("FUSOR", str(ROOT / "build" / "fusor"))
MODELS = ROOT / "models"


def run_fusor(*args, timeout=600):
    """Runs the CLI and returns the CompletedProcess (never raises on a non-zero exit)."""
    return subprocess.run([FUSOR, *map(str, args)], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def fusor():
    return run_fusor


def model_path(name):
    path = MODELS / name / "model.onnx"
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/get-models (make test does)")
    return path
