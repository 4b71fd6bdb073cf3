// The precision gate on a hand-built two-layer graph: with a fault planted in one fusion item
// (check/faults.h wraps that item's fused kernel), the gate rolls back exactly that item by its
// stable name, keeps every other item, and the plan it settles on matches the reference. With
// nothing wrong, nothing rolls back.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "check/faults.h"
#include "check/gate.h"
#include "fused_vs_reference.h"
#include "graph_builder.h"

namespace fusor {
namespace {

constexpr int64_t kWidth = 16;
const std::map<std::string, Dims> kDims = {{"x", {2, 8, kWidth}}};

Tensor normal(Dims dims, float mean, float scale, uint32_t seed) {
  Tensor t(DType::Float32, std::move(dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(mean, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = n(rng);
  return t;
}
Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  t.data<float>()[0] = v;
  return t;
}

// One layer, as exporters write it: y = Relu(LayerNorm(x) W + b), the LayerNorm decomposed.
int layer(test::GraphBuilder& b, int x, int index, uint32_t seed) {
  b.scope("/encoder/layer." + std::to_string(index) + "/");
  std::map<std::string, Attribute> last_axis = {{"axes", std::vector<int64_t>{-1}}};
  const std::string p = "l" + std::to_string(index);  // value names unique per layer
  int mean = b.node(Op::ReduceMean, {x}, p + "_mean", DType::Float32, last_axis);
  int centered = b.node(Op::Sub, {x, mean}, p + "_centered");
  int sq = b.node(Op::Pow, {centered, b.constant(p + "_two", scalar(2.f))}, p + "_sq");
  int var = b.node(Op::ReduceMean, {sq}, p + "_var", DType::Float32, last_axis);
  int sd = b.node(Op::Sqrt, {b.node(Op::Add, {var, b.constant(p + "_eps", scalar(1e-5f))}, p + "_var_eps")}, p + "_sd");
  int norm = b.node(Op::Div, {centered, sd}, p + "_norm");
  int scaled = b.node(Op::Mul, {norm, b.constant(p + "_gamma", normal({kWidth}, 1.f, 0.1f, seed))}, p + "_scaled");
  int ln = b.node(Op::Add, {scaled, b.constant(p + "_beta", normal({kWidth}, 0.f, 0.1f, seed + 1))}, p + "_ln");
  float fan_in = static_cast<float>(kWidth);
  int mm = b.node(Op::MatMul, {ln, b.constant(p + "_W", normal({kWidth, kWidth}, 0.f, 1.f / std::sqrt(fan_in), seed + 2))},
                  p + "_mm");
  int biased = b.node(Op::Add, {mm, b.constant(p + "_b", normal({kWidth}, 0.5f, 0.5f, seed + 3))}, p + "_biased");
  return b.node(Op::Relu, {biased}, p + "_out");
}

std::shared_ptr<const Graph> two_layers() {
  test::GraphBuilder b;
  int x = b.input("x");
  int h = layer(b, x, 0, 10);
  return b.finish({layer(b, h, 1, 20)});
}

// Only the LayerNorm and GEMM-epilogue items, so the fault kinds below each have their target.
FusionConfig items_under_test() {
  FusionConfig c;
  c.fuse_elemwise = false;
  c.fuse_attention = false;
  return c;
}

std::vector<std::string> item_names(const Plan& p) {
  std::vector<std::string> names;
  for (const FusionItem& i : p.fusion.items) names.push_back(i.name);
  return names;
}

CheckReport gate(const std::string& fault) {
  static const Engine engine = test::engine_of(*two_layers());
  CheckOptions o;
  o.fusion = items_under_test();
  o.dims = kDims;
  o.inject_fault = fault;
  return run_precision_gate(engine, o);
}

// In plan order: the LayerNorm pass runs before the GEMM-epilogue pass.
const std::vector<std::string> kItems = {"layer0.layernorm", "layer1.layernorm", "layer0.bias_relu", "layer1.bias_relu"};

TEST(Gate, TheGraphHasTheItemsTheFaultsTarget) {
  auto r = test::expect_fused_matches_reference(two_layers(), {{"x", normal(kDims.at("x"), 0.f, 1.f, 1)}},
                                                items_under_test());
  EXPECT_EQ(item_names(r.fused), kItems) << r.kernels();
}

TEST(Gate, NothingWrongNothingRollsBack) {
  CheckReport report = gate("");
  EXPECT_TRUE(report.passed);
  EXPECT_TRUE(report.rolled_back.empty());
  EXPECT_TRUE(report.final_fusion.disabled.empty());
  EXPECT_EQ(report.rounds, 1);
  std::vector<std::string> kept;
  for (const ItemVerdict& v : report.items) {
    EXPECT_EQ(v.status, ItemStatus::Kept) << v.name << ": " << v.vs_native.max_abs << " from native";
    kept.push_back(v.name);
  }
  std::sort(kept.begin(), kept.end());
  std::vector<std::string> all = kItems;
  std::sort(all.begin(), all.end());
  EXPECT_EQ(kept, all);
}

struct PlantedFault {
  const char* kind;  // check/faults.h
  const char* item;  // the item it goes into
};

class GateRollsBack : public ::testing::TestWithParam<PlantedFault> {};

// gtest prints a failing case with this (a free function in the parameter's namespace).
void PrintTo(const PlantedFault& f, std::ostream* os) { *os << f.kind << "@" << f.item; }

TEST_P(GateRollsBack, ExactlyTheFaultyItemAndTheSettledPlanMatchesTheReference) {
  const PlantedFault f = GetParam();
  const std::string fault = std::string(f.kind) + "@" + f.item;
  CheckReport report = gate(fault);
  EXPECT_EQ(report.injected_into, f.item);
  EXPECT_EQ(report.rolled_back, std::vector<std::string>{f.item});
  EXPECT_EQ(report.final_fusion.disabled, std::vector<std::string>{f.item});
  EXPECT_TRUE(report.passed);
  for (const ItemVerdict& v : report.items)
    EXPECT_EQ(v.status, v.name == f.item ? ItemStatus::RolledBack : ItemStatus::Kept) << v.name << " (tier " << v.tier << ", " << v.sample << ")";

  // The fault is real: with every item kept, the faulty kernel's plan disagrees with the reference.
  test::Feeds feeds = {{"x", normal(kDims.at("x"), 0.f, 1.f, 2)}};
  auto injector = [&] { return make_fault_injector(parse_fault(fault), std::make_shared<std::string>()); };
  auto faulty = test::run_fused_and_reference(two_layers(), feeds, items_under_test(), injector());
  EXPECT_FALSE(test::outputs_agree(faulty.fused_outputs, faulty.reference_outputs)) << faulty.kernels();

  // The settled plan, the same fault still armed, keeps every other item and matches the reference.
  auto settled = test::expect_fused_matches_reference(two_layers(), feeds, report.final_fusion, twin_tolerance(),
                                                      injector());
  std::vector<std::string> others = kItems;
  others.erase(std::find(others.begin(), others.end(), f.item));
  EXPECT_EQ(item_names(settled.fused), others);
}

// Each edge shape is a gate of its own: it once built its own fault target and, the faulted item
// rolled back, faulted and rolled back the first healthy item still fused.
TEST(Gate, AnEdgeShapeFaultsTheSameItemAsTheMainGate) {
  static const Engine engine = test::engine_of(*two_layers());
  for (const char* kind : {"reduced_precision", "stale_buffer"}) {
    CheckOptions o;
    o.fusion = items_under_test();
    o.dims = kDims;
    // Edge-case samples too: on "zeros", layer1's LayerNorm normalizes nearly constant rows, which
    // amplify the faulted layer0's small drift in its inputs. That drift is inherited, and layer1
    // was rolled back for it (tier 2) before block checks compared with the native kernels' own
    // outputs from the same inputs.
    o.edge_cases = true;
    o.edge_dims = {{{"x", {1, 1, kWidth}}}, {{"x", {4, 8, kWidth}}}};
    o.inject_fault = kind;
    CheckReport report = run_precision_gate(engine, o);
    EXPECT_FALSE(report.injected_into.empty()) << kind;
    EXPECT_EQ(report.rolled_back, std::vector<std::string>{report.injected_into}) << kind;
    EXPECT_EQ(report.final_fusion.disabled, std::vector<std::string>{report.injected_into}) << kind;
    EXPECT_TRUE(report.passed) << kind;
  }
}

INSTANTIATE_TEST_SUITE_P(Planted, GateRollsBack,
                         ::testing::Values(PlantedFault{"wrong_epsilon", "layer1.layernorm"},
                                           PlantedFault{"dropped_bias", "layer0.layernorm"},
                                           PlantedFault{"reduced_precision", "layer0.bias_relu"},
                                           PlantedFault{"reduced_precision", "layer1.bias_relu"}),
                         [](const auto& info) {
                           std::string name = std::string(info.param.kind) + "_" + info.param.item;
                           std::replace(name.begin(), name.end(), '.', '_');
                           return name;
                         });

}  // namespace
}  // namespace fusor
