"""--config FILE on `fusor run` and `fusor bench`: a good file runs, `mem_reuse: false` takes
effect (the arena grows to naive) without changing a bit of the output, and a bad file is a
one-line error naming the file, line and key, with exit 1."""
import json

import numpy as np

from conftest import model_path, run_fusor

EVERY_KEY = """\
fusion:
  fuse_elemwise: false
  fuse_norm_act: false
  fuse_gemm_epilogue: false
  fuse_attention: false
  precision_check: relaxed
  disabled: [layer3.attention, layer0.ffn.bias_gelu]
kernel:
  reorder_for_coalesce: false
batch_window_ms: 2.5
mem_reuse: true
fold_constants: false
"""


def run_minilm(out, *flags):
    r = run_fusor("run", model_path("minilm-l6"), "--batch", 2, "--seq", 8, "--output-dir", out, *flags)
    assert r.returncode == 0, r.stderr
    return {p.name: np.load(p) for p in sorted(out.glob("*.npy"))}


def bench_memory(tmp_path, *flags):
    report = tmp_path / "bench.json"
    r = run_fusor("bench", model_path("minilm-l6"), "--batch", 1, "--seq", 8, "--seconds", "0.01",
                  "--warmup", "0", "--json", report, *flags)
    assert r.returncode == 0, r.stderr
    return json.loads(report.read_text())["results"][0]["memory"]


def one_line_error(r):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fusor: error: "), r.stderr
    return lines[0]


def test_good_config_runs(tmp_path):
    cfg = tmp_path / "every_key.yaml"
    cfg.write_text(EVERY_KEY)
    outputs = run_minilm(tmp_path / "out", "--config", cfg)
    assert outputs and all(np.isfinite(a).all() for a in outputs.values())


def test_mem_reuse_false_is_bit_identical_and_takes_effect(tmp_path):
    cfg = tmp_path / "no_reuse.yaml"
    cfg.write_text("# reuse off, everything else default\nmem_reuse: false\n")
    default = run_minilm(tmp_path / "default")
    no_reuse = run_minilm(tmp_path / "no_reuse", "--config", cfg)
    assert default and default.keys() == no_reuse.keys()
    for name, a in default.items():
        assert a.tobytes() == no_reuse[name].tobytes(), f"{name} differs with mem_reuse: false"
    # The switch is wired: without reuse every intermediate has its own bytes.
    on, off = bench_memory(tmp_path), bench_memory(tmp_path, "--config", cfg)
    assert on["arena_bytes"] < on["naive_bytes"]
    assert off["arena_bytes"] == off["naive_bytes"]


def test_unknown_key_exits_1_with_line(tmp_path):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("fusion:\n  fuse_elemwise: true\n  fuse_elemwize: false\n")
    line = one_line_error(run_fusor("run", model_path("minilm-l6"), "--config", cfg,
                                    "--output-dir", tmp_path / "out"))
    assert line == (f"fusor: error: {cfg}:3:3: unknown key 'fusion.fuse_elemwize' "
                    "(did you mean 'fuse_elemwise'?)")
    assert not (tmp_path / "out").exists()


def test_bad_value_in_bench_exits_1_with_line(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("mem_reuse: true\nbatch_window_ms: soon\n")
    line = one_line_error(run_fusor("bench", model_path("minilm-l6"), "--config", cfg))
    assert line == f"fusor: error: {cfg}:2:18: 'batch_window_ms' must be a non-negative number of at most 86400000 (24 hours), got 'soon'"


def test_missing_or_garbage_config_exits_1(tmp_path):
    one_line_error(run_fusor("run", model_path("minilm-l6"), "--config", tmp_path / "missing.yaml"))
    garbage = tmp_path / "garbage.yaml"
    garbage.write_bytes(b"fusion: [\x00\xff{,\n")
    line = one_line_error(run_fusor("run", model_path("minilm-l6"), "--config", garbage))
    assert f"{garbage}:" in line
