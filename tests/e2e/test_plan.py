"""`fusor plan` on a hand-written tuned.yaml: its numbers against the same arithmetic done here
from the file's curve, the Kubernetes manifests parsed back, and every kind of bad input."""
import json
import math
import re

import pytest
import yaml

from conftest import run_fusor

# The chosen interactive curve: (offered, achieved, p50, p99, utilisation, errors).
CURVE = [(25, 25, 4, 7, 0.12, 0), (50, 50, 5, 9, 0.25, 0), (100, 99, 7, 14, 0.5, 0),
         (150, 146, 11, 26, 0.74, 0), (200, 170, 40, 120, 0.95, 12)]


def point(c):
    o, a, p50, p99, u, e = c
    return {"offered_qps": o, "achieved_qps": a, "p50_ms": p50, "p99_ms": p99, "utilisation": u,
            "mean_batch": 1.4, "errors": e}


TUNED = {
    "serve": {"default_class": "interactive", "classes": {
        "interactive": {"batch_window_ms": 2, "max_batch": 4},
        "batch": {"batch_window_ms": 20, "max_batch": 16}}},
    "tuned": {
        "model": "models/minilm-l6/model.onnx", "model_hash": "9c0f", "machine": "AMD EPYC, 2 threads",
        "threads": 2, "request": {"input_ids": [1, 32]}, "arrivals": "poisson", "duration_s": 4,
        "interrupted": False,
        "classes": [
            {"name": "batch", "slo": {"p99_ms": 2000, "throughput": True}, "capacity_qps": 300,
             "chosen": {"batch_window_ms": 20, "max_batch": 16, "execution_contexts": 1},
             "candidates": [{"setting": {"batch_window_ms": 20, "max_batch": 16, "execution_contexts": 1},
                             "predicted_qps": 320, "capacity_qps": 300,
                             "curve": [point((150, 150, 60, 120, 0.4, 0)), point((300, 298, 90, 400, 0.85, 0))]}]},
            {"name": "interactive", "slo": {"p99_ms": 20}, "capacity_qps": 100,
             "chosen": {"batch_window_ms": 2, "max_batch": 4, "execution_contexts": 1},
             "candidates": [
                 {"setting": {"batch_window_ms": 1, "max_batch": 1, "execution_contexts": 1},
                  "predicted_qps": 90, "capacity_qps": 50, "curve": [point((50, 50, 3, 19, 0.4, 0))]},
                 {"setting": {"batch_window_ms": 2, "max_batch": 4, "execution_contexts": 1},
                  "predicted_qps": 140, "capacity_qps": 100, "curve": [point(c) for c in CURVE]}]}],
        "matrix": [{"rows": 1, "option": "all", "ms": 6.5, "chosen": True}]}}


@pytest.fixture
def tuned(tmp_path):
    path = tmp_path / "tuned.yaml"
    path.write_text("# a hand-written tuned.yaml\n" + yaml.safe_dump(TUNED, sort_keys=False))
    return path


def by_hand(qps, target, headroom):
    """The plan's arithmetic, from CURVE: capacity where p99 crosses the target, then the
    prediction interpolated at the per-instance load."""
    for (o0, _, _, p0, _, _), (o1, _, _, p1, _, _) in zip(CURVE, CURVE[1:]):
        if p0 <= target < p1:
            capacity = o0 + (target - p0) / (p1 - p0) * (o1 - o0)
            break
    instances = max(1, math.ceil(qps / (capacity * (1 - headroom))))
    load = qps / instances
    for lo, hi in zip(CURVE, CURVE[1:]):
        if lo[0] <= load <= hi[0]:
            t = (load - lo[0]) / (hi[0] - lo[0])
            pred = [lo[i] + t * (hi[i] - lo[i]) for i in (4, 2, 3)]
            break
    else:  # below the first point
        pred = [CURVE[0][4] * load / CURVE[0][0], CURVE[0][2], CURVE[0][3]]
    return capacity, instances, load, pred


def plan(tuned, tmp_path, *args):
    out = tmp_path / "plan.json"
    r = run_fusor("plan", "--tuned", tuned, "--json", out, *args)
    assert r.returncode == 0, r.stderr
    return json.loads(out.read_text()), r


def test_numbers_come_from_the_measured_curve(tuned, tmp_path):
    j, r = plan(tuned, tmp_path, "--qps", 2000, "--cost-per-hour", 1.2)
    capacity, instances, load, (util, p50, p99) = by_hand(2000, 20, 0.3)
    assert capacity == pytest.approx(125)  # p99 14 ms at 100 qps, 26 ms at 150 qps
    assert j["class"] == "interactive"  # the first latency class, though batch is listed first
    assert j["p99_target_ms"] == 20 and j["headroom"] == 0.3 and j["qps"] == 2000
    assert j["capacity_qps_per_instance"] == pytest.approx(capacity)
    assert j["instances"] == instances == 23
    assert j["per_instance_qps"] == pytest.approx(load)
    assert j["predicted"] == pytest.approx({"utilisation": util, "p50_ms": p50, "p99_ms": p99})
    assert j["cost_per_hour"] == 1.2
    assert j["cost_per_hour_total"] == pytest.approx(instances * 1.2)
    assert j["cost_per_million"] == pytest.approx(instances * 1.2 / (2000 * 3600) * 1e6)
    assert j["threads_per_instance"] == 2
    assert j["setting"] == {"batch_window_ms": 2, "max_batch": 4, "execution_contexts": 1}
    assert j["manifests"] == []
    assert set(j) == {"class", "qps", "p99_target_ms", "headroom", "capacity_qps_per_instance", "instances",
                      "per_instance_qps", "predicted", "cost_per_hour", "cost_per_hour_total", "cost_per_million",
                      "threads_per_instance", "setting", "manifests"}
    assert "23" in r.stdout and "cost per million" in r.stdout


@pytest.mark.parametrize("p99", ["25ms", "0.025s", "25", "25000us"])
def test_p99_target_in_any_unit(tuned, tmp_path, p99):
    j, _ = plan(tuned, tmp_path, "--qps", 500, "--p99", p99, "--headroom", 0)
    capacity, instances, _, _ = by_hand(500, 25, 0)
    assert j["p99_target_ms"] == pytest.approx(25)
    assert j["capacity_qps_per_instance"] == pytest.approx(capacity)
    assert j["instances"] == instances == 4


def test_a_point_with_errors_bounds_the_capacity(tuned, tmp_path):
    # 30 ms is crossed only at 200 qps, which answered 12 requests with errors: 150 qps is the capacity.
    j, _ = plan(tuned, tmp_path, "--qps", 500, "--p99", "30ms", "--headroom", 0)
    assert j["capacity_qps_per_instance"] == pytest.approx(150)
    assert j["instances"] == 4


def test_low_load_and_explicit_class(tuned, tmp_path):
    j, _ = plan(tuned, tmp_path, "--qps", 10)
    assert j["instances"] == 1
    assert j["predicted"] == pytest.approx({"utilisation": 0.12 * 10 / 25, "p50_ms": 4, "p99_ms": 7})
    assert j["cost_per_hour_total"] == 0
    j, _ = plan(tuned, tmp_path, "--qps", 1000, "--class", "batch")
    assert j["class"] == "batch" and j["p99_target_ms"] == 2000
    assert j["capacity_qps_per_instance"] == pytest.approx(300)  # every point within 2 s
    assert j["instances"] == 5  # ceil(1000 / 210)


def test_k8s_manifests_parse_and_carry_the_plan(tuned, tmp_path):
    k8s = tmp_path / "deploy" / "k8s"
    j, r = plan(tuned, tmp_path, "--qps", 2000, "--k8s", k8s, "--image", "registry.example/fusor:1", "--model-name", "minilm")
    files = {"configmap.yaml", "deployment.yaml", "service.yaml", "hpa.yaml", "inferenceservice.yaml"}
    assert set(j["manifests"]) == files
    docs = {f: yaml.safe_load((k8s / f).read_text()) for f in files}
    assert {f: d["kind"] for f, d in docs.items()} == {
        "configmap.yaml": "ConfigMap", "deployment.yaml": "Deployment", "service.yaml": "Service",
        "hpa.yaml": "HorizontalPodAutoscaler", "inferenceservice.yaml": "InferenceService"}

    cm = docs["configmap.yaml"]
    assert cm["data"]["tuned.yaml"] == tuned.read_text()  # the pods serve the tuned config verbatim

    dep = docs["deployment.yaml"]
    assert dep["spec"]["replicas"] == j["instances"] == 23
    pod = dep["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    c = pod["spec"]["containers"][0]
    assert c["image"] == "registry.example/fusor:1"
    assert c["command"] + c["args"][:6] == ["fusor", "serve", "--model", "minilm=/models/model.onnx", "--config",
                                             "/etc/fusor/tuned.yaml", "--threads", "2"]
    assert {p["name"]: p["containerPort"] for p in c["ports"]} == {"http": 8000, "grpc": 8001, "metrics": 8002}
    assert c["readinessProbe"]["httpGet"]["path"] == "/v2/health/ready"
    assert c["livenessProbe"]["httpGet"]["path"] == "/v2/health/live"
    assert c["resources"]["requests"]["cpu"] == c["resources"]["limits"]["cpu"] == "2"
    assert "memory" in c["resources"]["requests"]
    assert pod["spec"]["volumes"][0]["configMap"]["name"] == cm["metadata"]["name"]

    svc = docs["service.yaml"]["spec"]
    assert svc["type"] == "ClusterIP" and svc["selector"] == dep["spec"]["selector"]["matchLabels"]
    assert sorted(p["port"] for p in svc["ports"]) == [8000, 8001, 8002]

    hpa = docs["hpa.yaml"]
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"]["name"] == dep["metadata"]["name"]
    assert hpa["spec"]["minReplicas"] == 23 and hpa["spec"]["maxReplicas"] == 92
    m = hpa["spec"]["metrics"][0]
    assert m["type"] == "Pods" and m["pods"]["metric"]["name"] == "nv_inference_pending_request_count"
    in_flight = max(1, math.ceil(j["per_instance_qps"] * j["predicted"]["p50_ms"] / 1000))  # Little's law
    assert int(m["pods"]["target"]["averageValue"]) == in_flight
    assert "Little's law" in (k8s / "hpa.yaml").read_text()

    pred = docs["inferenceservice.yaml"]["spec"]["predictor"]
    assert pred["minReplicas"] == 23 and pred["scaleTarget"] == in_flight
    assert pred["containers"][0]["args"] == c["args"]
    assert "written to" in r.stdout


def test_hpa_target_above_one_at_a_slow_curve(tuned, tmp_path):
    # At 2000 qps with no headroom and --p99 25 ms, each instance runs near 150 qps where p50 is ~11 ms.
    k8s = tmp_path / "k8s"
    j, _ = plan(tuned, tmp_path, "--qps", 2000, "--p99", "25", "--headroom", 0, "--k8s", k8s)
    want = math.ceil(j["per_instance_qps"] * j["predicted"]["p50_ms"] / 1000)
    assert want >= 2
    hpa = yaml.safe_load((k8s / "hpa.yaml").read_text())
    assert int(hpa["spec"]["metrics"][0]["pods"]["target"]["averageValue"]) == want


def one_line_error(r, *fragments):
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fusor: error: "), r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    assert not re.search(r"\d{16}", lines[0]), lines[0]  # a double's noise digits (1e300 qps: 63 of them)


def test_runtime_errors_exit_1_with_one_line(tuned, tmp_path):
    one_line_error(run_fusor("plan", "--tuned", tmp_path / "missing.yaml", "--qps", 10), "missing.yaml")
    plain = tmp_path / "plain.yaml"
    plain.write_text("batch_window_ms: 2\n")
    one_line_error(run_fusor("plan", "--tuned", plain, "--qps", 10), "plain.yaml", "tuned")
    one_line_error(run_fusor("plan", "--tuned", tuned, "--qps", 10, "--class", "bulk"),
                   "unknown class 'bulk'", "batch, interactive")
    one_line_error(run_fusor("plan", "--tuned", tuned, "--qps", 10, "--p99", "5ms"),
                   "never reaches p99 <= 5 ms; lowest measured p99 is 7 ms at 25 qps")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_error(run_fusor("plan", "--tuned", tuned, "--qps", 10, "--k8s", blocker / "k8s"), "--k8s")
    broken = tmp_path / "broken.yaml"
    broken.write_text(tuned.read_text().replace("p99_ms: 14", "p99_ms: fast"))
    one_line_error(run_fusor("plan", "--tuned", broken, "--qps", 10), "broken.yaml")
    # The instance count overflowed int64 at 1e30 qps (1 instance planned) and Kubernetes' int32
    # replicas at 1e20; the largest double names its rate in exponent form.
    for qps, says in (("1e20", "1e+20 qps"), ("1e30", "1e+30 qps"), ("1e300", "1e+300 qps")):
        one_line_error(run_fusor("plan", "--tuned", tuned, "--qps", qps), "more instances than", says)


@pytest.mark.parametrize("edit, says", [
    (lambda t: t.update(threads=-2), "tuned.threads must be in [1, 1024]"),  # --k8s wrote cpu: "-2"
    (lambda t: t["classes"][1]["slo"].update(p99_ms=-20), "p99_ms must not be negative"),  # read as no bound
    (lambda t: t["classes"][1]["slo"].update(p99_ms=0), "must be a positive target"),
    (lambda t: t["classes"][1]["candidates"][1]["curve"][0].update(errors=-12), "errors must not be negative"),
    (lambda t: t["classes"][0].update(name="interactive"), "'interactive' names an earlier class too"),
])
def test_a_hand_edited_record_out_of_range_is_refused(tmp_path, edit, says):
    t = yaml.safe_load(yaml.safe_dump(TUNED))
    edit(t["tuned"])
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(t, sort_keys=False))
    one_line_error(run_fusor("plan", "--tuned", path, "--qps", 10, "--k8s", tmp_path / "k8s"), "edited.yaml", says)
    assert not (tmp_path / "k8s").exists()


@pytest.mark.parametrize("args, fragment", [
    (["--qps", 0], "--qps"),
    (["--qps", -3], "--qps"),
    (["--qps", "many"], "--qps"),
    (["--qps", "nan"], "--qps"),  # passed the parse, then failed the plan with exit 1
    (["--qps", "inf"], "--qps"),
    (["--qps", "-inf"], "--qps"),
    (["--qps", "1e400"], "--qps"),
    (["--qps", "10x"], "--qps"),
    (["--tokens-per-s", 0], "--tokens-per-s"),
    (["--tokens-per-s", "nan"], "--tokens-per-s"),
    (["--qps", 10, "--cost-per-hour", "nan"], "--cost-per-hour"),
    (["--qps", 10, "--cost-per-hour", "inf"], "--cost-per-hour"),
    (["--qps", 10, "--p99", "fast"], "--p99"),
    (["--qps", 10, "--p99", "-5ms"], "--p99"),
    (["--qps", 10, "--headroom", 0.95], "--headroom"),
    (["--qps", 10, "--headroom", -0.1], "--headroom"),
    (["--qps", 10, "--cost-per-hour", -1], "--cost-per-hour"),
    (["--qps", 10, "--model-name", "a=b"], "--model-name"),
    ([], "--qps"),
])
def test_usage_errors_exit_2(tuned, args, fragment):
    r = run_fusor("plan", "--tuned", tuned, *args)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert fragment in r.stderr
    # CLI11's own range checks named DBL_MAX in 309 digits.
    assert not re.search(r"\d{16}", r.stderr) and len(r.stderr) < 300, r.stderr


def with_curve(tmp_path, name, curve, **record):
    """TUNED with the chosen curve of class `name` replaced, and top-level record fields set."""
    t = yaml.safe_load(yaml.safe_dump(TUNED))
    t["tuned"].update(record)
    for c in t["tuned"]["classes"]:
        if c["name"] == name:
            chosen = next(k for k in c["candidates"] if k["setting"] == c["chosen"])
            chosen["curve"] = [point(p) for p in curve]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(t, sort_keys=False))
    return path


def test_the_predicted_p99_stays_within_the_target_the_capacity_was_sized_for(tmp_path):
    """A slow outlier between two faster points: capacity rests on the curve's non-decreasing fit
    (255 qps within 30 ms), but the prediction interpolated the raw points and said 44.8 ms."""
    curve = [(100, 100, 5, 11.4, 0.4, 0), (237.5, 237.5, 8, 44.8, 0.9, 0), (255, 255, 8, 10.3, 0.95, 0)]
    j, _ = plan(with_curve(tmp_path, "interactive", curve), tmp_path, "--qps", 237.5, "--p99", "30ms", "--headroom", 0)
    assert j["capacity_qps_per_instance"] == pytest.approx(255)
    assert j["predicted"]["p99_ms"] == pytest.approx((44.8 + 10.3) / 2)  # the fit's pooled value
    assert j["predicted"]["p99_ms"] <= 30


def test_a_generative_throughput_class_is_not_interpolated_past_its_last_good_point(tmp_path):
    """plan.md: a decoder's capacity is never interpolated. A throughput class sets no TTFT or ITL
    target, and plan took the record for an encoder's from the SLO: 150 to 300 qps interpolated."""
    curve = [(150, 150, 60, 120, 0.4, 0), (300, 298, 90, 400, 0.85, 0)]
    path = with_curve(tmp_path, "batch", curve, generative=True, output_tokens=64)
    j, _ = plan(path, tmp_path, "--tokens-per-s", 64 * 100, "--class", "batch", "--p99", "200ms", "--headroom", 0)
    assert j["capacity_qps_per_instance"] == pytest.approx(150)
