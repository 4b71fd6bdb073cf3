"""The compute-thread budget: fusor runs as many compute threads as CPUs it may use (affinity mask,
capped by the cgroup CPU quota), OMP_NUM_THREADS or --threads when given. Read back from the
thread count `fusor profile --json` reports."""
import json
import math
import os
import pathlib
import shutil
import subprocess

import pytest

from conftest import FUSOR, model_path


def cgroup_quota():
    """The CPU quota in CPUs from cgroup v2 cpu.max, None when unlimited (as fusor reads it)."""
    try:
        lines = pathlib.Path("/proc/self/cgroup").read_text().splitlines()
        path = next((l[3:] for l in lines if l.startswith("0::")), "")
        quota, period = pathlib.Path(f"/sys/fs/cgroup{path}/cpu.max").read_text().split()
        return None if quota == "max" else float(quota) / float(period)
    except (OSError, ValueError, StopIteration):
        return None


def run_profile(tmp_path, *args, prefix=(), env=None):
    """A quick `fusor profile` of MiniLM at batch 1, length 8; OMP_NUM_THREADS unset unless `env` sets it."""
    cmd = [*prefix, FUSOR, "profile", model_path("minilm-l6"), "--batch", "1", "--seq", "8", "--runs", "1",
           "--warmup", "0", "--quick", "--cache-dir", tmp_path, *args]
    full_env = {**os.environ, "FUSOR_CACHE_DIR": str(tmp_path)}
    full_env.pop("OMP_NUM_THREADS", None)
    full_env.update(env or {})
    return subprocess.run(list(map(str, cmd)), capture_output=True, text=True, timeout=300, env=full_env)


def profiled_threads(tmp_path, *args, prefix=(), env=None):
    report = tmp_path / "p.json"
    r = run_profile(tmp_path, "--json", report, *args, prefix=prefix, env=env)
    assert r.returncode == 0, r.stderr
    p = json.loads(report.read_text())
    assert p["ceilings"]["threads"] == p["threads"]
    return p["threads"]


def test_default_is_the_cpus_the_process_may_use(tmp_path):
    expected = len(os.sched_getaffinity(0))
    quota = cgroup_quota()
    if quota is not None:
        expected = min(expected, max(1, math.ceil(quota)))
    assert profiled_threads(tmp_path) == expected


@pytest.mark.skipif(shutil.which("taskset") is None, reason="taskset (util-linux) is not installed")
def test_an_affinity_mask_of_one_cpu_gives_one_thread(tmp_path):
    assert profiled_threads(tmp_path, prefix=("taskset", "-c", str(min(os.sched_getaffinity(0))))) == 1


def test_omp_num_threads_and_the_flag_override_the_default(tmp_path):
    assert profiled_threads(tmp_path, env={"OMP_NUM_THREADS": "3"}) == 3
    assert profiled_threads(tmp_path, "--threads", "5", env={"OMP_NUM_THREADS": "3"}) == 5


def test_a_bad_openmp_wait_variable_fails_with_one_line_naming_it(tmp_path):
    """FUSOR_OPENMP_WAIT (src/kernels/cpu/openmp_wait.h) takes spin, sleep or auto; any other value
    fails the command with one line that names the variable, whatever kernels the plan runs."""
    r = run_profile(tmp_path, env={"FUSOR_OPENMP_WAIT": "fast"})
    assert r.returncode != 0
    errors = [l for l in r.stderr.splitlines() if "error" in l]
    assert errors == ["fusor: error: FUSOR_OPENMP_WAIT is 'fast'; expected spin, sleep or auto"], r.stderr
    for mode in ("spin", "sleep", "auto"):
        r = run_profile(tmp_path, env={"FUSOR_OPENMP_WAIT": mode})
        assert r.returncode == 0, (mode, r.stderr)
