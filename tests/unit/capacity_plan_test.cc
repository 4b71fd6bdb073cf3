// fusor plan's arithmetic on hand-built tuned records, and its Kubernetes manifests parsed back.
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "capacity/capacity_plan.h"
#include "capacity/k8s_manifests.h"
#include "fusor/error.h"

namespace fusor::capacity {
namespace {

using tune::Candidate;
using tune::ClassRecord;
using tune::CurvePoint;
using tune::Setting;
using tune::TunedRecord;

CurvePoint point(double offered, double achieved, double p50, double p99, double util, int64_t errors = 0) {
  return {offered, achieved, p50, p99, util, 1.5, errors};
}

// interactive (SLO p99 20 ms): p99 crosses 20 ms halfway between 80 and 120 qps -> capacity 100.
ClassRecord interactive() {
  ClassRecord c;
  c.name = "interactive";
  c.slo = {20, false};
  c.chosen = {2, 4, 1};
  c.capacity_qps = 80;
  Candidate other{{8, 8, 1}, 300, 0, {point(50, 50, 30, 90, 0.3)}};  // not chosen: never read
  Candidate k{{2, 4, 1}, 110, 80,
              {point(20, 20, 5, 8, 0.1), point(40, 40, 6, 10, 0.2), point(80, 79.5, 8, 16, 0.4),
               point(120, 118, 10, 24, 0.6), point(160, 150, 30, 80, 0.8, 3)}};
  c.candidates = {other, k};
  return c;
}

ClassRecord batch() {
  ClassRecord c;
  c.name = "batch";
  c.slo = {2000, true};
  c.chosen = {20, 16, 1};
  c.candidates = {{{20, 16, 1}, 400, 300, {point(100, 100, 50, 90, 0.3), point(300, 295, 80, 200, 0.9)}}};
  c.capacity_qps = 300;
  return c;
}

TunedRecord record() {
  TunedRecord r;
  r.model = "models/minilm-l6/model.onnx";
  r.machine = "AMD EPYC, 2 threads";
  r.threads = 2;
  r.classes = {batch(), interactive()};  // a throughput class first: not the default
  return r;
}

PlanRequest req(double qps, double headroom = 0.3) {
  PlanRequest q;
  q.qps = qps;
  q.headroom = headroom;
  return q;
}

TEST(CapacityPlan, InterpolatesCapacityAndPredictsAtThePerInstanceLoad) {
  PlanRequest q = req(1000);
  q.cost_per_hour = 1.2;
  CapacityPlan p = plan_capacity(record(), q);
  EXPECT_EQ(p.class_name, "interactive");  // the first latency class
  EXPECT_DOUBLE_EQ(p.p99_target_ms, 20);
  EXPECT_NEAR(p.capacity_qps_per_instance, 100, 1e-9);
  EXPECT_EQ(p.instances, 15);  // ceil(1000 / 70)
  EXPECT_NEAR(p.per_instance_qps, 1000.0 / 15, 1e-9);
  // 66.67 qps is 2/3 of the way from 40 to 80 qps.
  EXPECT_NEAR(p.utilisation, 0.2 + 0.2 * 2 / 3, 1e-9);
  EXPECT_NEAR(p.p50_ms, 6 + 2.0 * 2 / 3, 1e-9);
  EXPECT_NEAR(p.p99_ms, 10 + 6.0 * 2 / 3, 1e-9);
  EXPECT_NEAR(p.cost_per_hour_total, 18, 1e-9);
  EXPECT_NEAR(p.cost_per_million, 18 / (1000.0 * 3600) * 1e6, 1e-9);
  EXPECT_EQ(p.threads_per_instance, 2);
  EXPECT_EQ(p.setting, (Setting{2, 4, 1}));
  EXPECT_NE(p.capacity_basis.find("interpolated"), std::string::npos) << p.capacity_basis;
}

TEST(CapacityPlan, AnExactFitDoesNotRoundUpToOneMoreInstance) {
  EXPECT_EQ(plan_capacity(record(), req(700)).instances, 10);  // 700 / (100 x 0.7) = 10
  EXPECT_EQ(plan_capacity(record(), req(700.1)).instances, 11);
}

TEST(CapacityPlan, BelowTheFirstPointUtilisationScalesFromZero) {
  CapacityPlan p = plan_capacity(record(), req(10, 0));
  EXPECT_EQ(p.instances, 1);
  EXPECT_NEAR(p.utilisation, 0.05, 1e-12);
  EXPECT_DOUBLE_EQ(p.p50_ms, 5);
  EXPECT_DOUBLE_EQ(p.p99_ms, 8);
}

TEST(CapacityPlan, ALooserTargetStopsAtTheLastPointWithoutErrors) {
  PlanRequest q = req(1000);
  q.p99_ms = 100;  // every p99 is within; 160 qps had errors, so 120 is the last usable point
  CapacityPlan p = plan_capacity(record(), q);
  EXPECT_DOUBLE_EQ(p.capacity_qps_per_instance, 120);
  EXPECT_EQ(p.instances, 12);  // ceil(1000 / 84)
}

// The point past the target fell behind (it queued): no interpolation toward it, which had
// planned more than that setting ever answered (docs/plan.md).
TEST(CapacityPlan, NoInterpolationTowardAPointThatFellBehind) {
  TunedRecord r = record();
  ClassRecord& c = r.classes[1];
  c.candidates[1].curve[3] = point(120, 100, 10, 24, 0.6);  // 120 offered, 100 answered
  CapacityPlan p = plan_capacity(r, req(1000));
  EXPECT_DOUBLE_EQ(p.capacity_qps_per_instance, 80);
  EXPECT_EQ(p.capacity_basis.find("interpolated"), std::string::npos) << p.capacity_basis;
}

// A tuner's curve may hold two points at one offered rate (onboard failed on one from a busy run);
// a curve that goes down is still refused.
TEST(CapacityPlan, TwoPointsAtOneRateAreAValidCurveButADescentIsNot) {
  TunedRecord r = record();
  auto& curve = r.classes[1].candidates[1].curve;
  curve.insert(curve.begin() + 2, point(40, 40, 7, 12, 0.25));
  CapacityPlan p = plan_capacity(r, req(1000));
  EXPECT_NEAR(p.capacity_qps_per_instance, 100, 1e-9);
  std::swap(curve[0], curve[3]);
  EXPECT_THROW(plan_capacity(r, req(1000)), Error);
}

TEST(CapacityPlan, WhenEveryPointIsWithinTheTunersCapacityBoundsTheSloTarget) {
  TunedRecord r = record();
  Candidate& k = r.classes[1].candidates[1];
  k.curve.pop_back();  // no errors left: every point is within p99 <= 30 ms
  k.capacity_qps = 110;
  r.classes[1].slo.p99_ms = 30;
  EXPECT_DOUBLE_EQ(plan_capacity(r, req(100)).capacity_qps_per_instance, 110);
  PlanRequest looser = req(100);
  looser.p99_ms = 50;  // beyond the SLO the tuner judged: the highest measured rate
  EXPECT_DOUBLE_EQ(plan_capacity(r, looser).capacity_qps_per_instance, 120);
}

TEST(CapacityPlan, ExplicitClassAndDefaultWithoutLatencyClasses) {
  PlanRequest q = req(600);
  q.class_name = "batch";
  CapacityPlan p = plan_capacity(record(), q);
  EXPECT_EQ(p.class_name, "batch");
  EXPECT_DOUBLE_EQ(p.p99_target_ms, 2000);
  EXPECT_DOUBLE_EQ(p.capacity_qps_per_instance, 300);
  TunedRecord only_batch = record();
  only_batch.classes.pop_back();
  EXPECT_EQ(plan_capacity(only_batch, req(10)).class_name, "batch");
}

TEST(CapacityPlan, ACurveThatNeverMeetsTheTargetIsAClearError) {
  PlanRequest q = req(100);
  q.p99_ms = 5;
  try {
    plan_capacity(record(), q);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "the tuned curve for class interactive never reaches p99 <= 5 ms; lowest measured p99 is 8 ms at 20 qps");
  }
}

// A --p99 tighter than the SLO on a noisy curve (wav2vec2's, onboard): the first points miss
// 30 ms by a few, 333 qps meets it, and plan finds it as tune would (it said no point met 30 ms).
TEST(CapacityPlan, ATighterTargetOnANoisyCurveFindsTheRateThatMeetsIt) {
  TunedRecord r = record();
  ClassRecord& c = r.classes[1];
  c.slo.p99_ms = 50;
  c.capacity_qps = c.candidates[1].capacity_qps = 333;
  c.candidates[1].curve = {point(244, 244, 3, 36.6, 0.4), point(318, 318, 9, 35.1, 0.7), point(333, 333, 2, 7.8, 0.3),
                           point(357, 357, 5, 51.1, 0.6), point(414, 414, 106, 184, 0.9)};
  PlanRequest q = req(200);
  q.p99_ms = 30;
  const CapacityPlan p = plan_capacity(r, q);
  EXPECT_NEAR(p.capacity_qps_per_instance, 333 + 24 * (30 - 7.8) / (51.1 - 7.8), 1e-9) << p.capacity_basis;
  q.p99_ms = 25;  // the three lowest rates average 26.5 ms: 333's 7.8 ms is a lucky run
  try {
    plan_capacity(r, q);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "the tuned curve for class interactive has no rate within p99 <= 25 ms that its other points "
                           "bear out: 333 qps met it alone (p99 7.8 ms), above lower rates that missed it or had errors");
  }
}

TEST(CapacityPlan, BadRequestsAreOneLineErrors) {
  PlanRequest unknown = req(100);
  unknown.class_name = "bulk";
  try {
    plan_capacity(record(), unknown);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "unknown class 'bulk'; the tuned record has: batch, interactive");
  }
  EXPECT_THROW(plan_capacity(record(), req(0)), Error);
  EXPECT_THROW(plan_capacity(record(), req(-5)), Error);
  EXPECT_THROW(plan_capacity(record(), req(100, 0.95)), Error);
  EXPECT_THROW(plan_capacity(record(), req(100, -0.1)), Error);
  TunedRecord no_curve = record();
  no_curve.classes[1].chosen = {1, 1, 1};
  EXPECT_THROW(plan_capacity(no_curve, req(100)), Error);
  EXPECT_THROW(plan_capacity(TunedRecord{}, req(100)), Error);
}

TEST(CapacityPlan, NumbersHaveAtMostTwoDecimals) {
  EXPECT_EQ(two_decimals(131.456), "131.46");
  EXPECT_EQ(two_decimals(9.1), "9.1");
  EXPECT_EQ(two_decimals(20), "20");
  EXPECT_EQ(two_decimals(0.0021), "0");
  EXPECT_EQ(two_decimals(-0.001), "0");
  // Huge ones in exponent form (1e300 qps was 63 digits, cut short by the buffer).
  EXPECT_EQ(two_decimals(1e300), "1e+300");
  EXPECT_EQ(two_decimals(1.5e20), "1.5e+20");
  EXPECT_EQ(two_decimals(999999999999999.0), "999999999999999");
}

TEST(CapacityPlan, JsonHasExactlyTheReportsFields) {
  CapacityPlan p = plan_capacity(record(), req(1000));
  p.manifests = {"deployment.yaml"};
  nlohmann::json j = capacity_plan_json(p);
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  EXPECT_EQ(keys, (std::set<std::string>{"class", "qps", "p99_target_ms", "headroom", "capacity_qps_per_instance",
                                         "instances", "per_instance_qps", "predicted", "cost_per_hour",
                                         "cost_per_hour_total", "cost_per_million", "threads_per_instance", "setting",
                                         "manifests"}));
  EXPECT_EQ(j["predicted"].size(), 3u);
  EXPECT_DOUBLE_EQ(j["predicted"]["p99_ms"].get<double>(), p.p99_ms);
  EXPECT_EQ(j["setting"]["max_batch"], 4);
  EXPECT_EQ(j["instances"], 15);
  EXPECT_EQ(j["manifests"][0], "deployment.yaml");
  std::string table = capacity_plan_table(p);
  EXPECT_NE(table.find("15"), std::string::npos) << table;
}

// A decoder's record: chat (TTFT p99 <= 500 ms, ITL p99 <= 50 ms) keeps both up to 2 req/s; at
// 3 req/s the gaps break their target, so the capacity is 2 req/s = 128 tokens/s.
TunedRecord generative_record() {
  auto point = [](double offered, double ttft, double itl, double util) {
    CurvePoint p{offered, offered * 0.99, 2000, 3000, util, 0, 0};
    p.ttft_p50_ms = ttft / 2, p.ttft_p99_ms = ttft, p.itl_p50_ms = itl / 2, p.itl_p99_ms = itl;
    p.output_tokens_per_s = offered * 64;
    return p;
  };
  TunedRecord r;
  r.model = "models/llama-tiny/model.onnx";
  r.threads = 2;
  r.generative = true;
  r.output_tokens = 64;
  ClassRecord c;
  c.name = "chat";
  c.slo = {.ttft_p99_ms = 500, .itl_p99_ms = 50};
  c.chosen.step_tokens = 256, c.chosen.max_running = 8, c.chosen.prefill_chunk = 64;
  c.capacity_qps = 2;
  c.candidates = {{c.chosen, 4, 2, {point(1, 200, 20, 0.25), point(2, 400, 40, 0.5), point(3, 450, 60, 0.75)}}};
  r.classes = {c};
  return r;
}

TEST(CapacityPlan, AGenerativeRecordPlansByTokensPerSecondUnderItsFirstTokenAndGapTargets) {
  PlanRequest request;
  request.tokens_per_s = 1000;  // 15.625 req/s of 64 tokens
  request.headroom = 0.2;
  CapacityPlan p = plan_capacity(generative_record(), request);
  EXPECT_TRUE(p.generative);
  EXPECT_DOUBLE_EQ(p.qps, 1000.0 / 64);
  EXPECT_DOUBLE_EQ(p.capacity_qps_per_instance, 2);
  EXPECT_DOUBLE_EQ(p.capacity_tokens_per_s_per_instance, 128);
  EXPECT_EQ(p.instances, 10);  // 15.625 / (2 x 0.8) = 9.8
  EXPECT_DOUBLE_EQ(p.per_instance_qps, 1.5625);
  // Interpolated between the 1 and 2 req/s points.
  EXPECT_NEAR(p.ttft_p99_ms, 200 + 200 * 0.5625, 1e-9);
  EXPECT_NEAR(p.itl_p99_ms, 20 + 20 * 0.5625, 1e-9);
  EXPECT_DOUBLE_EQ(p.ttft_target_ms, 500);
  nlohmann::json j = capacity_plan_json(p);
  EXPECT_EQ(j["generative"]["setting"]["max_running"], 8);
  EXPECT_DOUBLE_EQ(j["generative"]["predicted"]["itl_p99_ms"].get<double>(), p.itl_p99_ms);
  const std::string table = capacity_plan_table(p);
  for (const char* text : {"tokens/s", "TTFT p99", "ITL p99", "step_tokens 256"})
    EXPECT_NE(table.find(text), std::string::npos) << text << "\n" << table;
  // A tighter whole-request bound than any point keeps: a clear error, naming the first point.
  request.p99_ms = 100;
  EXPECT_THROW(plan_capacity(generative_record(), request), Error);
}

TEST(CapacityPlan, TokensPerSecondIsOnlyForGenerativeRecordsAndNotWithQps) {
  PlanRequest request;
  request.tokens_per_s = 1000;
  EXPECT_THROW(plan_capacity(record(), request), Error);  // an encoder's record
  request.qps = 10;
  EXPECT_THROW(plan_capacity(generative_record(), request), Error);
  request.qps = 0;
  request.tokens_per_s = -5;
  EXPECT_THROW(plan_capacity(generative_record(), request), Error);
}

TEST(CapacityPlan, LittlesLawGivesTheRequestsInFlight) {
  CapacityPlan p;
  p.per_instance_qps = 100;
  p.p50_ms = 25;
  EXPECT_EQ(planned_requests_in_flight(p), 3);  // 2.5 rounded up
  p.p50_ms = 20;
  EXPECT_EQ(planned_requests_in_flight(p), 2);  // exactly 2
  p.p50_ms = 1;
  EXPECT_EQ(planned_requests_in_flight(p), 1);  // at least one
}

YAML::Node find(const std::vector<Manifest>& ms, const std::string& file) {
  for (const Manifest& m : ms)
    if (m.file_name == file) return YAML::Load(m.text);
  ADD_FAILURE() << "no " << file;
  return {};
}

TEST(CapacityPlan, ManifestsParseAndCarryThePlan) {
  PlanRequest q = req(2000, 0);
  CapacityPlan p = plan_capacity(record(), q);  // 20 instances at 100 qps: p50 9 ms
  ASSERT_EQ(p.instances, 20);
  p.p50_ms = 25;  // 2.5 requests in flight -> target 3
  ManifestOptions o;
  o.model_name = "MiniLM_L6";
  o.image = "registry.example/fusor:1.0";
  o.tuned_yaml = "  # starts with spaces\nserve: {default_class: interactive}\ntuned:\n  threads: 2\n";
  auto ms = k8s_manifests(p, o);
  ASSERT_EQ(ms.size(), 5u);

  YAML::Node cm = find(ms, "configmap.yaml");
  EXPECT_EQ(cm["kind"].as<std::string>(), "ConfigMap");
  EXPECT_EQ(cm["data"]["tuned.yaml"].as<std::string>(), o.tuned_yaml);

  YAML::Node d = find(ms, "deployment.yaml");
  EXPECT_EQ(d["kind"].as<std::string>(), "Deployment");
  EXPECT_EQ(d["metadata"]["name"].as<std::string>(), "fusor-minilm-l6");
  EXPECT_EQ(d["spec"]["replicas"].as<int>(), 20);
  YAML::Node c = d["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(c["image"].as<std::string>(), o.image);
  auto args = c["args"].as<std::vector<std::string>>();
  EXPECT_EQ(args[1], "MiniLM_L6=/models/model.onnx");
  EXPECT_EQ(args[3], "/etc/fusor/tuned.yaml");
  EXPECT_EQ(args[4], "--threads");
  EXPECT_EQ(args[5], "2");
  EXPECT_EQ(c["resources"]["limits"]["cpu"].as<std::string>(), "2");
  EXPECT_EQ(c["readinessProbe"]["httpGet"]["path"].as<std::string>(), "/v2/health/ready");
  EXPECT_EQ(c["livenessProbe"]["httpGet"]["path"].as<std::string>(), "/v2/health/live");
  EXPECT_EQ(c["ports"].size(), 3u);
  EXPECT_EQ(d["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"].as<std::string>(), "8002");
  EXPECT_EQ(d["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"].as<std::string>(),
            cm["metadata"]["name"].as<std::string>());

  YAML::Node s = find(ms, "service.yaml");
  EXPECT_EQ(s["spec"]["type"].as<std::string>(), "ClusterIP");
  EXPECT_EQ(s["spec"]["ports"][1]["port"].as<int>(), 8001);

  YAML::Node h = find(ms, "hpa.yaml");
  EXPECT_EQ(h["apiVersion"].as<std::string>(), "autoscaling/v2");
  EXPECT_EQ(h["spec"]["minReplicas"].as<int>(), 20);
  EXPECT_EQ(h["spec"]["maxReplicas"].as<int>(), 80);
  YAML::Node m = h["spec"]["metrics"][0];
  EXPECT_EQ(m["type"].as<std::string>(), "Pods");
  EXPECT_EQ(m["pods"]["metric"]["name"].as<std::string>(), "nv_inference_pending_request_count");
  EXPECT_EQ(m["pods"]["target"]["averageValue"].as<std::string>(), "3");

  YAML::Node isvc = find(ms, "inferenceservice.yaml");
  EXPECT_EQ(isvc["kind"].as<std::string>(), "InferenceService");
  EXPECT_EQ(isvc["spec"]["predictor"]["minReplicas"].as<int>(), 20);
  EXPECT_EQ(isvc["spec"]["predictor"]["scaleTarget"].as<int>(), 3);
  EXPECT_EQ(isvc["spec"]["predictor"]["containers"][0]["args"].as<std::vector<std::string>>(), args);
}

TEST(CapacityPlan, OneInstanceStillGetsRoomToScale) {
  auto ms = k8s_manifests(plan_capacity(record(), req(10)), {"m", "img", "tuned: {}\n", ""});
  YAML::Node h = find(ms, "hpa.yaml");
  EXPECT_EQ(h["spec"]["minReplicas"].as<int>(), 1);
  EXPECT_EQ(h["spec"]["maxReplicas"].as<int>(), 4);
}

TEST(CapacityPlan, ResourceNamesAreDns1123) {
  EXPECT_EQ(k8s_resource_name("MiniLM_L6"), "fusor-minilm-l6");
  EXPECT_EQ(k8s_resource_name("__a..b__"), "fusor-a-b");
  EXPECT_LE(k8s_resource_name(std::string(200, 'x')).size(), 63u - 6);
}

TEST(CapacityPlan, WritesManifestsAndRefusesAnUnwritableDirectory) {
  auto dir = std::filesystem::temp_directory_path() / ("tune_plan_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto names = write_manifests({{"a.yaml", "x: 1\n"}}, (dir / "k8s").string());
  EXPECT_EQ(names, std::vector<std::string>{"a.yaml"});
  EXPECT_TRUE(std::filesystem::exists(dir / "k8s" / "a.yaml"));
  std::ofstream(dir / "file") << "not a directory";
  EXPECT_THROW(write_manifests({{"a.yaml", "x: 1\n"}}, (dir / "file" / "k8s").string()), Error);
  std::filesystem::remove_all(dir);
}

TEST(CapacityPlan, PlansFromATunedYamlReadBack) {
  TunedRecord r = tune::parse_tuned_record(tune::tuned_yaml(Config{}, record(), "test"), "tuned.yaml");
  CapacityPlan p = plan_capacity(r, req(1000));
  EXPECT_NEAR(p.capacity_qps_per_instance, 100, 1e-9);
  EXPECT_EQ(p.instances, 15);
}

}  // namespace
}  // namespace fusor::capacity
