"""ONNX Runtime user code runs with only its import changed to fusor, and gives ONNX Runtime's
answers: tests/e2e/ort_compare.py's ONNX Runtime path, a sentence-embedding script and a
torchvision classification script."""
import subprocess
import sys
from pathlib import Path

import numpy as np

import fusor

SCRIPTS = Path(__file__).parent / "scripts"


def run_script(script, tmp_path, args, with_fusor):
    """Runs the script unchanged, or with `import onnxruntime` turned into an import of fusor."""
    source = (SCRIPTS / script).read_text()
    if with_fusor:
        import_line = next(ln for ln in source.splitlines() if ln.startswith("import onnxruntime"))
        source = source.replace(import_line, import_line.replace("import onnxruntime", "import fusor as onnxruntime")
                                if " as " not in import_line else import_line.replace("onnxruntime", "fusor"))
    path = tmp_path / ("fusor_" if with_fusor else "ort_") / script
    path.parent.mkdir(exist_ok=True)
    path.write_text(source)
    out = path.with_suffix(".npy")
    done = subprocess.run([sys.executable, str(path), *map(str, args), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return np.load(out), done.stdout


def test_sentence_embedding_script(minilm, tmp_path):
    ours, printed = run_script("sentence_embeddings.py", tmp_path, [minilm.parent], with_fusor=True)
    theirs, printed_by_ort = run_script("sentence_embeddings.py", tmp_path, [minilm.parent], with_fusor=False)
    np.testing.assert_allclose(ours, theirs, atol=1e-5)
    assert printed == printed_by_ort


def test_torchvision_classification_script(resnet18, tmp_path):
    ours, printed = run_script("classify_image.py", tmp_path, [resnet18], with_fusor=True)
    theirs, printed_by_ort = run_script("classify_image.py", tmp_path, [resnet18], with_fusor=False)
    np.testing.assert_allclose(ours, theirs, atol=1e-5, rtol=1e-4)
    assert printed.splitlines()[0].split(":")[0] == printed_by_ort.splitlines()[0].split(":")[0]  # top-1 class


def test_ort_compare_onnx_runtime_path(minilm, monkeypatch):
    import ort_compare
    inputs = ort_compare.make_inputs(minilm, 2, 16)
    expected = ort_compare.run_ort(minilm, inputs)  # ONNX Runtime itself
    monkeypatch.setitem(sys.modules, "onnxruntime", fusor)
    actual = ort_compare.run_ort(minilm, inputs)  # the same code, now on fusor
    assert ort_compare.compare(actual, expected)
