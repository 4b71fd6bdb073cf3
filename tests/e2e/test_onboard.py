"""fusor onboard on the real MiniLM: one command runs profile, optimize, check, tune and plan, and
writes a self-contained report that opens cleanly in headless Chromium, with every artifact the
report links to."""
import json
import re

import numpy as np
from onnx import TensorProto, helper, numpy_helper
import onnx
import pytest
import yaml

import html_render
from conftest import model_path, run_fusor
from test_report_render import check_page


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory):
    out = tmp_path_factory.mktemp("onboard") / "minilm"
    r = run_fusor("onboard", model_path("minilm-l6"), "--out", out, "--seq", "8", "--windows", "0,2",
                  "--max-batch", "1,4", "--duration", "0.5", "--measure", "1", "--slo", "interactive:p99=300ms",
                  "--slo", "batch:throughput", "--qps", "400", "--cost-per-hour", "1.5", timeout=1500)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    return out, r


def test_every_step_leaves_its_artifact(onboarded):
    out, r = onboarded
    for name in ("profile-before.json", "profile-after.json", "model.fused.onnx", "check.json", "check.junit.xml",
                 "tuned.yaml", "plan.json", "onboard.json", "report.html"):
        assert (out / name).is_file(), name
    for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap"):
        assert any(doc and doc.get("kind") == kind
                   for f in (out / "k8s").glob("*.yaml") for doc in yaml.safe_load_all(f.read_text())), kind
    assert f"report: {out / 'report.html'}" in r.stdout
    assert "tuned / default throughput" in r.stdout


def test_onboard_json_carries_each_steps_output(onboarded):
    out, _ = onboarded
    doc = json.loads((out / "onboard.json").read_text())
    assert doc["profile"]["before"]["kernels_per_inference"] > doc["profile"]["after"]["kernels_per_inference"]
    assert doc["check"]["passed"] is True
    assert {c["name"] for c in doc["tuned"]["classes"]} == {"interactive", "batch"}
    assert doc["tuned"]["baseline"]["capacity_qps"] > 0
    assert doc["plan"]["instances"] >= 1 and doc["plan"]["cost_per_hour"] == 1.5
    # The report lists the command lines that reproduce every artifact.
    assert [c.split()[1] for c in doc["commands"]] == ["profile", "profile", "optimize", "check", "tune", "plan"]


def test_report_opens_offline_without_errors(onboarded, tmp_path):
    out, _ = onboarded
    check_page(out / "report.html", tmp_path)
    html = (out / "report.html").read_text()
    assert "http://" not in html and "https://" not in html and "<script" not in html
    # Every link leads to a file beside the report (the manifests' led to the report's folder).
    links = re.findall(r'href="([^"#]+)"', html)
    assert any(link.startswith("k8s/") for link in links), links
    for link in links:
        assert (out / link).exists(), link


def test_render_only_rebuilds_the_report(onboarded):
    out, _ = onboarded
    before = (out / "report.html").read_text()
    (out / "report.html").unlink()
    r = run_fusor("onboard", "--render-only", out)
    assert r.returncode == 0, r.stderr
    after = (out / "report.html").read_text()
    assert after == before


def tiny_model(tmp_path):
    """x[batch, 16] @ W -> relu: answers in microseconds, so onboarding it takes seconds."""
    w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((16, 8)).astype(np.float32), "w")
    graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])],
                              "tiny", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])], [w])
    path = tmp_path / "model.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_headroom_plan_refuses_is_refused_before_any_step(tmp_path):
    r = run_fusor("onboard", tiny_model(tmp_path), "--out", tmp_path / "o", "--headroom", "0.95", "--slo", "a:p99=1s",
                  "--windows", "0", "--max-batch", "1", "--duration", "0.2", "--measure", "1", "--no-baseline",
                  timeout=300)
    assert r.returncode == 2 and "--headroom: must be a number in [0, 0.95)" in r.stderr
    assert not (tmp_path / "o").exists()


def test_a_failed_plan_step_fails_onboard_and_the_report_says_so(tmp_path):
    """No point meets p99 <= 1 us, so plan has no capacity to size: onboard still writes its
    report, which names the failed step instead of asking for --qps or --cost-per-hour, and links
    no manifests folder; then it exits 1."""
    out = tmp_path / "o"
    # An earlier run's plan in the same folder: kept, its manifests would deploy the old config.
    (out / "k8s").mkdir(parents=True)
    (out / "k8s" / "deployment.yaml").write_text("replicas: 5\n")
    (out / "plan.json").write_text("{}")
    r = run_fusor("onboard", tiny_model(tmp_path), "--out", out, "--slo", "interactive:p99=0.001ms", "--windows", "0",
                  "--max-batch", "1", "--duration", "0.2", "--measure", "1", "--no-baseline", "--cost-per-hour", "1",
                  timeout=300)
    assert r.returncode == 1 and "the plan step failed (exit 1): the report has no capacity plan" in r.stderr, r.stderr
    doc = json.loads((out / "onboard.json").read_text())
    assert doc["plan"] is None and "k8s" not in doc["files"] and not (out / "k8s").exists()
    assert not (out / "plan.json").exists()
    html = (out / "report.html").read_text()
    assert "the plan step failed" in html and "--qps" not in html.split("The commands onboard ran")[0]
    assert "set --cost-per-hour" not in html and "set --cost-per-hour" not in r.stdout
    for link in re.findall(r'href="([^"#]+)"', html):
        assert (out / link).exists(), link


def test_a_bad_slo_is_refused_before_any_step(tmp_path):
    """It failed in step 5, after both profiles, optimize (a 90 MB file for MiniLM) and check."""
    r = run_fusor("onboard", tiny_model(tmp_path), "--out", tmp_path / "o", "--slo", "bad", timeout=60)
    assert r.returncode == 1 and "--slo bad: must look like CLASS:p99=20ms" in r.stderr, r.stderr
    assert "== onboard" not in r.stderr and not (tmp_path / "o").exists()


def test_a_missing_model_fails_in_one_line(tmp_path):
    r = run_fusor("onboard", tmp_path / "nope.onnx", "--out", tmp_path / "o")
    assert r.returncode == 1 and "no such model file" in r.stderr and r.stderr.count("\n") == 1


def test_a_decoder_is_onboarded_by_generation(tmp_path):
    """llama-tiny: tune measures continuous-batching settings under TTFT and ITL targets, plan
    sizes the fleet in tokens per second, and the report shows both. The targets are loose, so
    that a slow or busy machine still has a capacity to plan from (the defaults are unit-tested)."""
    out = tmp_path / "llama"
    # The decoder's folder, as fusor serve and generate take it (tune refused a folder).
    r = run_fusor("onboard", model_path("llama-tiny").parent, "--out", out, "--seq", "16", "--lengths", "8-32",
                  "--output-tokens", "8", "--step-tokens", "64", "--max-running", "2", "--prefill-chunks", "0",
                  "--slo", "interactive:ttft=5s,itl=1s", "--slo", "batch:throughput",
                  "--duration", "0.5", "--measure", "1", "--tokens-per-s", "1000", "--no-baseline", timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-5000:]
    doc = json.loads((out / "onboard.json").read_text())
    tuned = doc["tuned"]
    assert tuned["generative"] is True and tuned["output_tokens"] == 8
    assert [c["name"] for c in tuned["classes"]] == ["interactive", "batch"]
    assert tuned["classes"][0]["slo"] == {"p99_ms": 0, "ttft_p99_ms": 5000, "itl_p99_ms": 1000}
    plan = doc["plan"]
    assert plan is not None, "the plan step failed:\n" + r.stderr[-3000:]
    assert plan["generative"]["output_tokens"] == 8 and abs(plan["qps"] - 1000 / 8) < 1e-9
    assert "--tokens-per-s" in doc["commands"][-1] and "--output-tokens 8" in doc["commands"][-2]
    # onboard's --no-baseline reaches its tune step (it was dropped, and the default measured).
    assert "--no-baseline" in doc["commands"][-2] and tuned.get("baseline") is None
    check_page(out / "report.html", tmp_path)
    html = (out / "report.html").read_text()
    assert "Time to first token against throughput" in html and "TTFT p99 at capacity" in html


def test_ctrl_c_during_the_precision_gate_exits_130(tmp_path):
    """Interrupted in its check step, onboard said 'the precision gate could not run (exit 130)'
    and exited 1, as if it had failed; Ctrl-C elsewhere (tune) already ended it with 130."""
    import os
    import signal
    import subprocess
    from conftest import FUSOR
    p = subprocess.Popen([FUSOR, "onboard", model_path("minilm-l6"), "--out", tmp_path / "o", "--slo", "a:p99=1s",
                          "--windows", "0", "--max-batch", "1", "--duration", "0.2", "--measure", "1",
                          "--no-baseline"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    try:
        for line in p.stderr:  # into the gate's rounds, where it watches for Ctrl-C
            if line.startswith("check: round 1"):
                break
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole foreground group
        rest = p.stderr.read()
        assert p.wait(timeout=120) == 130, rest
        assert "could not run" not in rest
    finally:
        if p.poll() is None:
            p.kill()
