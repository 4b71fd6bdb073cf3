"""fusor tune and fusor plan on the real llama-tiny decoder (issue #17): per traffic class the step
token budget, the running sequences and the prefill chunk, measured under each class's TTFT and
inter-token SLO on the continuous-batching scheduler; the tuned file serves, and plan sizes a fleet
in tokens per second."""
import json
import math
import urllib.request

import pytest
import yaml

from conftest import model_path, run_fusor
from serve_util import Served

OUTPUT_TOKENS = 8
# A small grid: the mechanics, not the best setting, are under test here.
QUICK = ["--lengths", "8-32", "--output-tokens", OUTPUT_TOKENS, "--step-tokens", "64", "--max-running", "2,4",
         "--prefill-chunks", "16,0", "--duration", "1", "--measure", "1"]
SLOS = ["--slo", "chat:ttft=2s,itl=500ms", "--slo", "batch:throughput"]


@pytest.fixture(scope="module")
def tuned(tmp_path_factory):
    out = tmp_path_factory.mktemp("tune-generate") / "tuned.yaml"
    r = run_fusor("tune", model_path("llama-tiny"), *QUICK, *SLOS, "-o", out, timeout=900)
    assert r.returncode == 0, r.stderr[-5000:]
    return out, r


def meets_slo(point, cls):
    slo = cls["slo"]
    return (point["errors"] == 0 and point["achieved_qps"] >= 0.95 * point["offered_qps"]
            and point["ttft_p99_ms"] <= (slo.get("ttft_p99_ms") or math.inf)  # 0 or absent: unbounded
            and point["itl_p99_ms"] <= (slo.get("itl_p99_ms") or math.inf))


def at_capacity(cls):
    """The measured point the class's capacity rests on: of two runs that offered one rate (the
    tuner counts the arrivals actually sent), the last that met the SLO."""
    cand = next(c for c in cls["candidates"] if c["setting"] == cls["chosen"])
    offered = [p["offered_qps"] for p in cand["curve"]]
    assert offered == sorted(offered)
    at = [p for p in cand["curve"] if math.isclose(p["offered_qps"], cls["capacity_qps"])]
    assert at, "the capacity is a measured rate"
    met = [p for p in at if meets_slo(p, cls)]
    assert met, at
    return met[-1]


def test_each_class_gets_measured_generation_limits_within_its_slo(tuned):
    path, r = tuned
    doc = yaml.safe_load(path.read_text())
    rec, serve = doc["tuned"], doc["serve"]
    assert rec["generative"] is True and rec["output_tokens"] == OUTPUT_TOKENS and rec["lengths"] == [8, 32]
    assert rec["matrix"] == []
    chat, batch = rec["classes"]
    assert (chat["name"], batch["name"]) == ("chat", "batch")
    assert chat["slo"]["ttft_p99_ms"] == 2000 and chat["slo"]["itl_p99_ms"] == 500
    for cls in (chat, batch):
        chosen = cls["chosen"]
        # The grid, or the config's own setting (step 256, 32 running); batch's grid is at chat's
        # step, so where chat chose the config's 256, batch may run 2 or 4 there.
        assert (chosen["step_tokens"], chosen["max_running"]) in {(64, 2), (64, 4), (256, 32), (64, 32), (256, 2), (256, 4)}
        assert chosen["prefill_chunk"] in (16, 0)
        assert chosen["step_tokens"] == chat["chosen"]["step_tokens"]
        assert cls["capacity_qps"] > 0, cls
        point = at_capacity(cls)
        assert 0 < point["ttft_p50_ms"] <= point["ttft_p99_ms"] and 0 < point["itl_p50_ms"] <= point["itl_p99_ms"]
        assert cls["capacity_tokens_per_s"] == point["output_tokens_per_s"]
        assert 0 < point["utilisation"] <= 1
    # The serve config: each class's limits and targets, the lead's step for all, room for both.
    assert serve["default_class"] == "chat" and serve["step_tokens"] == chat["chosen"]["step_tokens"]
    assert serve["max_sequences"] == chat["chosen"]["max_running"] + batch["chosen"]["max_running"]
    for cls in (chat, batch):
        served = serve["classes"][cls["name"]]
        assert served["max_running"] == cls["chosen"]["max_running"]
        assert served.get("prefill_chunk", 0) == cls["chosen"]["prefill_chunk"]  # 0 (the step) is not written
    assert serve["classes"]["chat"]["ttft_target_ms"] == 2000 and serve["classes"]["chat"]["itl_target_ms"] == 500
    assert serve["classes"]["chat"]["priority"] < serve["classes"]["batch"]["priority"]
    # The default config measured the same way, under the lead class's SLO.
    base = rec["baseline"]
    assert base["name"] == "chat" and base["chosen"]["step_tokens"] == 256 and base["chosen"]["max_running"] == 32
    assert "tok/s" in r.stdout and "tuned / default" in r.stdout
    assert r.stderr.count(": saturated ") == 2 * (4 + 1)  # every setting of both classes' grids, and the default
    # The baseline is the lead's own measured candidate of the config's setting, and the lead's
    # choice is at least as good.
    assert base in [{**chat, "candidates": [c], "chosen": c["setting"], "capacity_qps": c["capacity_qps"],
                     "capacity_tokens_per_s": base["capacity_tokens_per_s"]} for c in chat["candidates"]]
    assert chat["capacity_qps"] >= base["capacity_qps"]


def test_serve_runs_the_tuned_config(tuned, tmp_path):
    path, _ = tuned
    server = Served(tmp_path, config=path.read_text(), models=[("llama", model_path("llama-tiny"))])
    try:
        for cls in ("chat", "batch"):
            body = json.dumps({"model": "llama", "prompt": [5, 6, 7], "max_tokens": 4, "temperature": 0,
                               "ignore_eos": True, "fusor_class": cls}).encode()
            req = urllib.request.Request(f"http://{server.url}/v1/completions", body,
                                         {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=60) as resp:
                assert json.load(resp)["usage"]["completion_tokens"] == 4
    finally:
        assert server.stop() == 0


def test_plan_sizes_a_fleet_in_tokens_per_second(tuned, tmp_path):
    path, _ = tuned
    rec = yaml.safe_load(path.read_text())["tuned"]
    chat = rec["classes"][0]
    r = run_fusor("plan", "--tuned", path, "--tokens-per-s", 2000, "--headroom", 0.2, "--json", tmp_path / "plan.json")
    assert r.returncode == 0, r.stderr
    assert "TTFT p99" in r.stdout and "tokens/s" in r.stdout
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["class"] == "chat"
    assert math.isclose(plan["qps"], 2000 / OUTPUT_TOKENS)
    assert plan["capacity_qps_per_instance"] <= chat["capacity_qps"] + 1e-9
    assert plan["instances"] == math.ceil(plan["qps"] / (plan["capacity_qps_per_instance"] * 0.8) - 1e-9)
    gen = plan["generative"]
    assert gen["output_tokens"] == OUTPUT_TOKENS and gen["setting"] == {
        k: chat["chosen"][k] for k in ("step_tokens", "max_running", "prefill_chunk")}
    assert gen["predicted"]["ttft_p99_ms"] <= 2000 and gen["predicted"]["itl_p99_ms"] <= 500
    # --qps and --tokens-per-s exclude each other; one of them is needed.
    r = run_fusor("plan", "--tuned", path, "--qps", 5, "--tokens-per-s", 100)
    assert r.returncode == 2 and "excludes" in r.stderr
    r = run_fusor("plan", "--tuned", path)
    assert r.returncode == 2 and "--qps" in r.stderr


@pytest.mark.parametrize("model, args, message", [
    ("llama-tiny", ["--slo", "chat:ttft=1s", "--windows", "0,2"], "--windows: not for a decoder"),
    ("llama-tiny", ["--slo", "chat:ttft=1s", "--max-running", "0"], "--max-running"),
    ("llama-tiny", ["--slo", "chat:ttft=1s", "--lengths", "500-510", "--output-tokens", "64"], "exceeds the model's context"),
    ("minilm-l6", ["--slo", "chat:ttft=1s"], "ttft= and itl= are for generative models"),
    ("minilm-l6", ["--slo", "a:throughput", "--step-tokens", "64"], "--step-tokens: only for a decoder"),
])
def test_bad_generation_arguments_fail_in_one_line(tmp_path, model, args, message):
    r = run_fusor("tune", model_path(model), *args, "--duration", "0.5", "-o", tmp_path / "t.yaml", timeout=120)
    assert r.returncode == 1, r.stderr[-3000:]
    assert r.stderr.strip().count("\n") == 0 and message in r.stderr, r.stderr
