"""fusor tune on the real MiniLM: the tuned file is a serve config that fusor serve and fusor plan
read, every number in it is a measurement that meets its SLO, Ctrl-C keeps the best found so
far, a recorded trace can replace Poisson arrivals, mixed lengths tune MiniLM's token budget, and bad
arguments fail in one line."""
import math
import os
import re
import shutil
import signal
import subprocess

import numpy as np
import pytest
import tritonclient.http as httpclient
import yaml

from conftest import FUSOR, model_path, run_fusor
from serve_util import Served, tiny_model

# A small sweep: the mechanics, not the best setting, are under test here.
QUICK = ["--seq", "8", "--windows", "0,2", "--max-batch", "1,4", "--duration", "0.5", "--measure", "1"]
SLOS = ["--slo", "interactive:p99=300ms", "--slo", "batch:throughput"]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    out = tmp_path_factory.mktemp("tune") / "tuned.yaml"
    r = run_fusor("tune", model_path("minilm-l6"), *QUICK, *SLOS, "-o", out, timeout=900)
    assert r.returncode == 0, r.stderr
    return out, r


def test_tuned_file_is_a_serve_config_holding_its_measurements(tuned):
    path, r = tuned
    doc = yaml.safe_load(path.read_text())
    serve = doc["serve"]
    assert set(serve["classes"]) == {"interactive", "batch"}
    assert serve["default_class"] == "interactive"
    assert serve["classes"]["interactive"]["priority"] < serve["classes"]["batch"]["priority"]
    rec = doc["tuned"]
    assert rec["interrupted"] is False and rec["arrivals"] == "poisson"
    assert rec["request"]["input_ids"] == [1, 8]
    for cls in rec["classes"]:
        chosen = cls["chosen"]
        assert serve["classes"][cls["name"]]["max_batch"] == chosen["max_batch"]
        assert serve["classes"][cls["name"]]["batch_window_ms"] == chosen["batch_window_ms"]
        assert serve["execution_contexts"] == chosen["execution_contexts"]
        assert cls["capacity_qps"] > 0, cls
        cand = next(c for c in cls["candidates"] if c["setting"] == chosen)
        offered = [p["offered_qps"] for p in cand["curve"]]
        assert offered == sorted(offered)
        # The capacity is a measured point, and that point met the SLO.
        at = [p for p in cand["curve"] if math.isclose(p["offered_qps"], cls["capacity_qps"])]
        assert at and at[0]["p99_ms"] <= cls["slo"]["p99_ms"] and at[0]["errors"] == 0
        assert 0 < at[0]["utilisation"] <= 1.05
    # MiniLM packs: each class was tuned by token budget, which the serve config carries, and its
    # points count the tokens the batcher ran.
    assert rec["packed"] is True and "lengths" not in rec
    for cls in rec["classes"]:
        assert serve["classes"][cls["name"]]["max_batch_tokens"] == cls["chosen"]["max_batch_tokens"] >= 1
        for cand in cls["candidates"]:
            for p in cand["curve"]:
                assert p["useful_tokens_per_s"] > 0 and 0 <= p["padding"] < 1 and 0 <= p["bucket_padding"] < 1, p
    assert "tune: the model packs" in r.stderr
    base = rec["baseline"]
    assert base["chosen"] == {"batch_window_ms": 0.0, "max_batch": 1, "execution_contexts": 1}
    assert base["capacity_qps"] > 0
    # One fusion option chosen per batch size, each timed.
    rows = {m["rows"] for m in rec["matrix"]}
    assert rows == {1, 2, 4}
    for n in rows:
        assert sum(m["chosen"] for m in rec["matrix"] if m["rows"] == n) == 1
    # ... from alternated rounds, whose evidence is recorded: all against itself, the others against all.
    for m in rec["matrix"]:
        assert m["rounds"] >= 5 and 0 <= m["wins"] <= m["rounds"] and m["ratio"] > 0 and m["ratio_mad"] >= 0, m
        if m["option"] == "all":
            assert m["wins"] == 0 and m["ratio"] == 1
    assert "tune: batch 1 runs " in r.stderr
    assert "tuned / default throughput at the interactive SLO" in r.stdout


def test_serve_runs_the_tuned_config(tuned, tmp_path):
    path, _ = tuned
    server = Served(tmp_path, config=path.read_text(), models=[("minilm", model_path("minilm-l6"))])
    try:
        client = httpclient.InferenceServerClient(server.url)
        ids = np.array([[101, 7592, 2088, 102, 0, 0]], dtype=np.int64)
        for cls in ("interactive", "batch"):
            inputs = []
            for name, data in (("input_ids", ids), ("attention_mask", (ids > 0).astype(np.int64)),
                               ("token_type_ids", np.zeros_like(ids))):
                t = httpclient.InferInput(name, list(data.shape), "INT64")
                t.set_data_from_numpy(data)
                inputs.append(t)
            out = client.infer("minilm", inputs, parameters={"class": cls}).as_numpy("last_hidden_state")
            assert out.shape == (1, 6, 384) and np.isfinite(out).all()
    finally:
        assert server.stop() == 0
    log = server.output()
    assert "batch sizes" in log  # the matrix the tuner chose was logged
    assert "is not the model" not in log, log


def test_serve_warns_when_the_tuned_config_was_measured_on_another_model(tuned, tmp_path):
    path, _ = tuned
    server = Served(tmp_path, config=path.read_text(), models=[("other", tiny_model(tmp_path))])
    assert server.stop() == 0
    assert "fusor serve: warning: model other is not the model" in server.output(), server.output()


def test_plan_reads_the_tuned_file(tuned, tmp_path):
    path, _ = tuned
    r = run_fusor("plan", "--tuned", path, "--qps", 500, "--json", tmp_path / "plan.json")
    assert r.returncode == 0, r.stderr
    assert "instances" in r.stdout


def test_ctrl_c_writes_the_best_found_so_far(tmp_path):
    out = tmp_path / "tuned.yaml"
    args = [FUSOR, "tune", str(model_path("minilm-l6")), "--seq", "8", "--windows", "0,2", "--max-batch", "1,4",
            "--duration", "1", "--measure", "2", "--slo", "interactive:p99=300ms", "-o", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, measured = [], 0.0
    for line in proc.stderr:  # not a terminal: one line per result
        seen.append(line)
        # Interrupted after the first candidate with a capacity (a stall of the shared machine can
        # fail every point of one: that candidate then has none to keep).
        found = re.search(r"interactive.*measured (\d+) qps", line)
        if found and float(found.group(1)) > 0:
            measured = float(found.group(1))
            proc.send_signal(signal.SIGINT)
            break
    rest_out, rest_err = proc.communicate(timeout=120)
    assert proc.returncode == 130, "".join(seen) + rest_err
    assert "interrupted" in rest_err
    doc = yaml.safe_load(out.read_text())
    assert doc["tuned"]["interrupted"] is True
    cls = doc["tuned"]["classes"][0]
    # The measurement was kept (printed rounded; a candidate cut short may have added a point).
    assert cls["capacity_qps"] >= measured - 0.5, "".join(seen) + rest_err
    assert doc["serve"]["classes"]["interactive"]["max_batch"] == cls["chosen"]["max_batch"]


def test_a_recorded_trace_replaces_poisson_arrivals(tmp_path):
    trace = tmp_path / "waves.csv"
    rng = np.random.default_rng(1)
    t, times = 0.0, []
    while t < 30:  # waves: the rate swings between 2/s and 18/s every 10 s
        rate = 10 + 8 * math.sin(2 * math.pi * t / 10)
        t += rng.exponential(1 / rate)
        times.append(t)
    trace.write_text("arrival_s\n" + "\n".join(f"{x:.6f}" for x in times) + "\n")
    out = tmp_path / "tuned.yaml"
    r = run_fusor("tune", model_path("minilm-l6"), "--seq", "8", "--windows", "0", "--max-batch", "1,4",
                  "--duration", "0.5", "--measure", "1", "--no-baseline", "--slo", "interactive:p99=300ms",
                  "--trace", trace, "-o", out, timeout=600)
    assert r.returncode == 0, r.stderr
    rec = yaml.safe_load(out.read_text())["tuned"]
    assert rec["arrivals"] == f"trace:{trace}"
    assert rec["classes"][0]["capacity_qps"] > 0 and rec["baseline"] is None


def test_mixed_lengths_sweep_the_token_budget(tmp_path):
    """--lengths sends lengths 4-16 uniformly; MiniLM packs, so the class is tuned by token budget:
    4 rows of at most 16 tokens never pass 64, which stands for every budget from there up."""
    out = tmp_path / "t.yaml"
    r = run_fusor("tune", model_path("minilm-l6"), "--lengths", "4-16", "--windows", "0", "--max-batch", "1,4",
                  "--token-budgets", "32,64,128,4096", "--duration", "0.3", "--measure", "2", "--no-baseline",
                  "--slo", "interactive:p99=500ms", "-o", out, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "sweeping max_batch_tokens 32,64 (max batch 4)" in r.stderr
    doc = yaml.safe_load(out.read_text())
    rec = doc["tuned"]
    assert rec["packed"] is True and rec["lengths"] == [4, 16]
    cls = rec["classes"][0]
    budgets = [c["setting"]["max_batch_tokens"] for c in cls["candidates"]]
    assert sorted(budgets) == [32, 64]
    assert cls["chosen"]["max_batch_tokens"] in budgets and cls["chosen"]["max_batch"] == 4
    assert doc["serve"]["classes"]["interactive"]["max_batch_tokens"] == cls["chosen"]["max_batch_tokens"]
    cand = next(c for c in cls["candidates"] if c["setting"] == cls["chosen"])
    for p in cand["curve"]:
        # Between 4 and 16 useful tokens per answered request.
        assert 4 * p["achieved_qps"] * 0.9 <= p["useful_tokens_per_s"] <= 16 * p["achieved_qps"] * 1.1, p
    assert "max_batch_tokens" in r.stdout


def test_the_gate_run_first_takes_the_request_length(tmp_path):
    """wav2vec2 takes audio of many samples, not the gate's default 16: the gate that tune runs
    first (no verdict saved yet) binds the request's --seq, so every fusion option is gated. At a
    length the model cannot take, the options are said to be ungated, not failed."""
    shutil.copyfile(model_path("wav2vec2-tiny"), tmp_path / "model.onnx")
    env = {**os.environ, "FUSOR_CACHE_DIR": str(tmp_path / "cache")}  # no verdict saved elsewhere

    def tune(seq):
        return subprocess.run([FUSOR, "tune", tmp_path / "model.onnx", "--seq", seq, "--slo", "a:p99=2s",
                               "--windows", "0", "--max-batch", "1", "--duration", "0.2", "--measure", "1",
                               "--no-baseline", "-o", tmp_path / "t.yaml"],
                              capture_output=True, text=True, timeout=300, env=env)

    short = tune("10")
    assert short.returncode == 1 and "fusion option all dropped, not gated" in short.stderr
    assert "fusor: error: no fusion option could be gated: " in short.stderr
    r = tune("16000")
    assert r.returncode == 0, r.stderr
    for option in ("all", "no-attention", "none"):
        assert f"tune: fusion option {option}: passes the gate" in r.stderr


@pytest.fixture(scope="module")
def tiny_tuned(tmp_path_factory):
    """y = relu(x @ w + b) over [batch, 8]: answers in microseconds, and has no attention."""
    folder = tmp_path_factory.mktemp("tiny")
    out = folder / "tuned.yaml"
    r = run_fusor("tune", tiny_model(folder), "--slo", "fast:p99=5ms", "--windows", "0", "--max-batch", "1,4",
                  "--duration", "0.3", "-o", out, timeout=300)
    assert r.returncode == 0, r.stderr
    return yaml.safe_load(out.read_text())["tuned"], r


def test_a_model_of_microseconds_is_searched_from_what_serving_answers(tiny_tuned):
    """Service times predict ~100x what serving answers on a model of microseconds (the prediction
    has no cost per request). The search used to start at the prediction: its first point queued
    a million requests, the tune took ten minutes and its capacity came out a tenth of the
    baseline's. It now starts below a saturation probe's ceiling."""
    rec, _ = tiny_tuned
    candidates = [c for cls in rec["classes"] for c in cls["candidates"]] + rec["baseline"]["candidates"]
    answered = max(p["achieved_qps"] for c in candidates for p in c["curve"])
    for c in candidates:
        assert c["predicted_qps"] > answered, c  # the regime under test: the prediction is above what is answered
        assert c["capacity_qps"] > 0, c
        assert max(p["offered_qps"] for p in c["curve"]) < 4 * answered, c


def test_an_option_whose_plan_repeats_another_is_not_timed(tiny_tuned):
    """Without attention, "no-attention" builds the plan "all" builds: timing both only measured
    noise between identical plans. "none" differs (the bias and ReLU are not fused into the MatMul)."""
    rec, r = tiny_tuned
    assert "fusion option no-attention: the same plan as all, not timed" in r.stderr
    timed = {m["option"] for m in rec["matrix"]}
    assert timed == {"all", "none"}, timed


def test_an_slo_no_setting_meets_is_said_and_the_closest_setting_kept(tmp_path):
    """A target of 1 us that nothing can meet: tune wrote a config of capacity 0 without a word,
    keeping the candidate predicted fastest. It now says so, and keeps the one that came closest."""
    out = tmp_path / "tuned.yaml"
    r = run_fusor("tune", tiny_model(tmp_path), "--slo", "fast:p99=0.001ms", "--windows", "0", "--max-batch", "1,4",
                  "--duration", "0.3", "-o", out, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "fusor tune: warning: class 'fast': no setting met its SLO (p99<=0.001ms)" in r.stderr, r.stderr
    [cls] = yaml.safe_load(out.read_text())["tuned"]["classes"]
    assert cls["capacity_qps"] == 0

    def closest(c):
        return min(p["p99_ms"] for p in c["curve"] if p["errors"] == 0)
    best = min(cls["candidates"], key=closest)
    assert cls["chosen"] == best["setting"], (cls["chosen"], [(c["setting"], closest(c)) for c in cls["candidates"]])
    # A run in which no request arrived is no point: one of 0 ms at 0 qps made plan interpolate a
    # capacity out of nothing where it must say that the SLO is never met.
    assert all(p["offered_qps"] > 0 for c in cls["candidates"] for p in c["curve"]), cls["candidates"]
    r = run_fusor("plan", "--tuned", out, "--qps", 10)
    assert r.returncode == 1 and "never reaches p99 <= 0" in r.stderr, r.stderr


def test_a_class_every_setting_is_priced_at_zero_for_still_measures_one(tmp_path):
    """When the model prices a lone request past the SLO, every setting is priced at 0 qps, and
    tune measured none: no curve, no warning, and a summary of 0 ms latencies."""
    out = tmp_path / "tuned.yaml"
    r = run_fusor("tune", tiny_model(tmp_path), "--slo", "fast:p99=0.001ms", "--windows", "0", "--max-batch", "1",
                  "--measure", "1", "--no-baseline", "--duration", "0.3", "-o", out, timeout=300)
    assert r.returncode == 0, r.stderr
    [cls] = yaml.safe_load(out.read_text())["tuned"]["classes"]
    assert len(cls["candidates"]) == 1 and cls["candidates"][0]["curve"], cls
    assert "no setting met its SLO" in r.stderr, r.stderr


@pytest.mark.parametrize("args, code, message", [
    (["--slo", "interactive"], 1, "must look like CLASS:p99=20ms"),
    (["--slo", "interactive:p99=fast"], 1, "must be a positive duration"),
    (["--slo", "a:throughput", "--slo", "a:p99=5ms"], 1, "class 'a' is given twice"),
    (["--slo", "a:p99=50ms,p99=20ms"], 1, "'p99' is given twice"),  # the last one won silently
    (["--slo", "a:throughput", "--max-batch", "0"], 1, "--max-batch"),
    (["--slo", "a:throughput", "--windows", "x"], 1, "--windows"),
    # NaN passed the range checks: a window of nan written to a config nothing loads, and a
    # duration of nan measured forever; a huge --max-batch timed ever larger batches.
    (["--slo", "a:throughput", "--windows", "nan"], 1, "--windows"),
    (["--slo", "a:throughput", "--duration", "nan"], 2, "--duration: must be a finite number > 0"),
    (["--slo", "a:throughput", "--max-batch", "99999999999"], 1, "--max-batch: 99999999999 is over 1048576"),
    (["--slo", "a:throughput", "--lengths", "9-8"], 1, "--lengths 9-8: MIN must not exceed MAX"),
    (["--slo", "a:throughput", "--lengths", "0-8"], 1, "--lengths"),
    (["--slo", "a:throughput", "--token-budgets", "0"], 1, "--token-budgets"),
    (["--slo", "a:throughput", "--trace", "/nonexistent.csv"], 1, "cannot read arrival trace"),
    ([], 2, "--slo is required"),
    # it skipped every (window, batch 1) pair, measured nothing and exited 0
    (["--slo", "a:throughput", "--max-batch", "1", "--windows", "5"], 1, "--max-batch 1 takes no batch window"),
])
def test_bad_arguments_fail_in_one_line(tmp_path, args, code, message):
    r = run_fusor("tune", model_path("minilm-l6"), *args, "-o", tmp_path / "t.yaml", timeout=60)
    assert r.returncode == code, r.stderr
    assert message in r.stderr
    if code == 1:
        assert r.stderr.count("\n") == 1, r.stderr


def test_output_over_the_model_is_refused(tmp_path):
    """`tune -o model.onnx` replaced a 46 MB model with 3 KB of YAML; `inspect --json` and the
    other reports could do the same."""
    model = tmp_path / "m.onnx"
    shutil.copyfile(model_path("minilm-l6"), model)
    size = model.stat().st_size
    for args in (["tune", model, "--slo", "a:throughput", "-o", model], ["inspect", model, "--json", model],
                 ["bench", model, "--json", model], ["profile", model, "--json", model],
                 ["check", model, "--report", model], ["check", model, "--junit", model]):
        r = run_fusor(*args, timeout=60)
        assert r.returncode != 0 and "is the model's own file" in r.stderr, (args, r.stderr)
    assert model.stat().st_size == size


def test_output_over_the_models_data_or_another_input_is_refused(tmp_path):
    """`inspect --json model.onnx.data` replaced a model's external weights (74 MiB), `bench
    --config c.yaml --json c.yaml` the config, `plan --json` the tuned file it read."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 64])], [w])
    model = tmp_path / "m.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), model, save_as_external_data=True,
              location="weights.bin", size_threshold=0)
    data = tmp_path / "weights.bin"
    config = tmp_path / "c.yaml"
    config.write_text("fusion: {precision_check: off}\n")
    before = data.read_bytes(), config.read_text()
    for args, says in ((["inspect", model, "--json", data], "is the model's own file"),
                       (["bench", model, "--json", data], "is the model's own file"),
                       (["bench", model, "--config", config, "--json", config], "which this command reads"),
                       (["plan", "--tuned", config, "--qps", 10, "--json", config], "which this command reads")):
        r = run_fusor(*args, timeout=60)
        assert r.returncode != 0 and says in r.stderr and r.stderr.count("\n") == 1, (args, r.stderr)
    assert (data.read_bytes(), config.read_text()) == before
    r = run_fusor("inspect", model, "--json", tmp_path / "report.json")
    assert r.returncode == 0, r.stderr  # the model runs with its data as it was


def test_bench_says_when_its_report_cannot_be_written():
    """A full disk fails the write, not the open: `bench --json /dev/full` exited 0."""
    r = run_fusor("bench", model_path("minilm-l6"), "--batch", 1, "--seq", 8, "--seconds", 0.05, "--warmup", 0,
                  "--json", "/dev/full", timeout=60)
    assert r.returncode == 1 and "cannot write /dev/full" in r.stderr, r.stderr


def test_unwritable_output_fails_before_measuring(tmp_path):
    r = run_fusor("tune", model_path("minilm-l6"), "--slo", "a:throughput", "-o", tmp_path / "missing" / "t.yaml",
                  timeout=30)
    assert r.returncode == 1 and "cannot write" in r.stderr
