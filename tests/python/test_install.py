"""The installed wheel: the package comes from the venv (not the source tree), finds its shared
libraries, and puts the fusor CLI on PATH."""
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import fusor
from fusor import _fusor


def test_package_is_installed_not_the_source_tree():
    assert Path(fusor.__file__).resolve().is_relative_to(Path(sysconfig.get_path("purelib")).resolve()) or \
        Path(fusor.__file__).resolve().is_relative_to(Path(sysconfig.get_path("platlib")).resolve())
    assert (Path(fusor.__file__).parent / "_fusor.pyi").exists()
    assert (Path(fusor.__file__).parent / "py.typed").exists()


def test_shared_libraries_resolve():
    for binary in [_fusor.__file__, fusor.pipeline.cli_path()]:
        ldd = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        assert "not found" not in ldd, ldd


def test_cli_is_on_path():
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    done = subprocess.run(["fusor", "--help"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and "fusor" in done.stdout
    assert fusor.pipeline.cli_path() == os.path.join(sysconfig.get_path("scripts"), "fusor")


def test_signatures_name_the_python_classes():
    # A function bound before a class it takes shows the C++ name (fusor::Engine) instead.
    for function in [_fusor.apply_precision_verdict, _fusor.generate, _fusor.optimize, _fusor.check]:
        assert "fusor::" not in function.__doc__, function.__doc__
