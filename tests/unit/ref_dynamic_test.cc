// Hand-checked cases for the data-dependent family (NonZero, Unique, Compress,
// NonMaxSuppression), their errors, and sessions planned per run when such a shape depends on a
// graph input's values.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>

#include "engine/internals.h"
#include "fusor/engine.h"
#include "fusor/profile.h"
#include "ir/data_dependent.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

using Ints = std::vector<int64_t>;

void expect_ints(const Tensor& t, Dims dims, Ints want) {
  ASSERT_EQ(t.dims(), dims);
  EXPECT_EQ(test::values<int64_t>(t), want);
}

TEST(RefDynamic, NonZeroIndicesPerDimension) {
  Node nz = node_of(Op::NonZero, 13);
  expect_ints(run(nz, {make_bool({2, 2}, {true, false, true, true})})[0], {2, 3}, {0, 1, 1, 0, 0, 1});
  // -0.0 is zero, NaN is not.
  expect_ints(run(nz, {make({3}, {-0.0f, std::nanf(""), 2})})[0], {1, 2}, {1, 2});
  expect_ints(run(nz, {make({2, 3}, std::vector<float>(6, 0.0f))})[0], {2, 0}, {});  // none: [rank, 0]
  expect_ints(run(nz, {make_i64({}, {7})})[0], {1, 1}, {0});                     // a scalar: as [1]
}

TEST(RefDynamic, UniqueFlattenedSortedAndInFirstOccurrenceOrder) {
  Tensor x = make({6}, {2, 1, 1, 3, 4, 3});
  auto s = run(node_of(Op::Unique, 11, {}, 4), {x});
  EXPECT_EQ(test::values<float>(s[0]), (std::vector<float>{1, 2, 3, 4}));
  expect_ints(s[1], {4}, {1, 0, 3, 4});
  expect_ints(s[2], {6}, {1, 0, 0, 2, 3, 2});
  expect_ints(s[3], {4}, {2, 1, 2, 1});
  auto u = run(node_of(Op::Unique, 11, {{"sorted", int64_t{0}}}, 4), {x});
  EXPECT_EQ(test::values<float>(u[0]), (std::vector<float>{2, 1, 3, 4}));
  expect_ints(u[1], {4}, {0, 1, 3, 4});
  expect_ints(u[2], {6}, {0, 1, 1, 2, 3, 2});
  expect_ints(u[3], {4}, {1, 2, 2, 1});
  // NaN sorts last and equals NaN; a 2-D input is flattened without an axis.
  auto n = run(node_of(Op::Unique, 11), {make({2, 2}, {std::nanf(""), 1, std::nanf(""), 1})});
  ASSERT_EQ(n[0].dims(), (Dims{2}));
  EXPECT_EQ(n[0].data<float>()[0], 1.0f);
  EXPECT_TRUE(std::isnan(n[0].data<float>()[1]));
}

TEST(RefDynamic, UniqueSlicesAlongAnAxis) {
  Tensor rows = make({3, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4});
  auto r = run(node_of(Op::Unique, 11, {{"axis", int64_t{0}}}, 4), {rows});
  ASSERT_EQ(r[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(test::values<float>(r[0]), (std::vector<float>{1, 0, 0, 2, 3, 4}));
  expect_ints(r[1], {2}, {0, 2});
  expect_ints(r[2], {3}, {0, 0, 1});
  expect_ints(r[3], {2}, {2, 1});
  // Columns (1,2), (1,2), (0,3): sorted lexicographically, (0,3) first.
  auto c = run(node_of(Op::Unique, 11, {{"axis", int64_t{-1}}}, 4), {make_i64({2, 3}, {1, 1, 0, 2, 2, 3})});
  expect_ints(c[0], {2, 2}, {0, 1, 3, 2});
  expect_ints(c[1], {2}, {2, 0});
  expect_ints(c[2], {3}, {1, 1, 0});
  expect_ints(c[3], {2}, {1, 2});
  expect_error(node_of(Op::Unique, 11, {{"axis", int64_t{2}}}), {rows}, "axis");
  expect_error(node_of(Op::Unique, 11, {{"sorted", int64_t{2}}}), {rows}, "sorted must be 0 or 1");
}

TEST(RefDynamic, CompressAlongAxisOrFlattened) {
  Tensor x = make({3, 2}, {1, 2, 3, 4, 5, 6});
  Node axis0 = node_of(Op::Compress, 11, {{"axis", int64_t{0}}});
  EXPECT_EQ(test::values<float>(run(axis0, {x, make_bool({3}, {false, true, true})})[0]), (std::vector<float>{3, 4, 5, 6}));
  // A shorter condition drops the entries past its end.
  auto shorter = run(axis0, {x, make_bool({2}, {false, true})})[0];
  ASSERT_EQ(shorter.dims(), (Dims{1, 2}));
  EXPECT_EQ(test::values<float>(shorter), (std::vector<float>{3, 4}));
  auto cols = run(node_of(Op::Compress, 11, {{"axis", int64_t{-1}}}), {x, make_bool({2}, {false, true})})[0];
  ASSERT_EQ(cols.dims(), (Dims{3, 1}));
  EXPECT_EQ(test::values<float>(cols), (std::vector<float>{2, 4, 6}));
  auto flat = run(node_of(Op::Compress, 11), {x, make_bool({4}, {true, false, false, true})})[0];
  EXPECT_EQ(test::values<float>(flat), (std::vector<float>{1, 4}));
  EXPECT_EQ(run(axis0, {x, make_bool({3}, {false, false, false})})[0].dims(), (Dims{0, 2}));
  expect_error(axis0, {x, make_bool({4}, {true, true, true, true})}, "condition has 4 entries, more than the 3");
  expect_error(axis0, {x, make_i64({3}, {1, 0, 1})}, "condition must be a 1-D bool tensor");
}

// Boxes as [y1, x1, y2, x2]: 0 and 1 overlap (IoU 0.81), 2 is apart.
Tensor three_boxes() { return make({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11}); }
Tensor one(int64_t v) { return make_i64({1}, {v}); }
Tensor onef(float v) { return make({1}, {v}); }

TEST(RefDynamic, NonMaxSuppressionSuppressesAndLimitsPerClass) {
  Node nms = node_of(Op::NonMaxSuppression, 11);
  Tensor scores = make({1, 2, 3}, {0.9f, 0.8f, 0.7f, 0.1f, 0.3f, 0.2f});
  // Class 0: box 0, then 1 goes (IoU 0.81 > 0.5), then 2. Class 1: box 1, 2 (0 overlaps 1).
  expect_ints(run(nms, {three_boxes(), scores, one(10), onef(0.5f), Tensor()})[0], {4, 3},
              {0, 0, 0, 0, 0, 2, 0, 1, 1, 0, 1, 2});
  // One box per class at most; the IoU threshold above 0.81 keeps overlapping boxes.
  expect_ints(run(nms, {three_boxes(), scores, one(1), onef(0.5f), Tensor()})[0], {2, 3}, {0, 0, 0, 0, 1, 1});
  expect_ints(run(nms, {three_boxes(), scores, one(2), onef(0.9f), Tensor()})[0], {4, 3},
              {0, 0, 0, 0, 0, 1, 0, 1, 1, 0, 1, 2});
  // Equal scores: the lower box index first; identical boxes suppress each other.
  Tensor same = make({1, 2, 4}, {0, 0, 1, 1, 0, 0, 1, 1});
  expect_ints(run(nms, {same, make({1, 1, 2}, {0.5f, 0.5f}), one(5), onef(0.5f), Tensor()})[0], {1, 3}, {0, 0, 0});
  // Every score under the threshold, or no limit given: nothing selected.
  expect_ints(run(nms, {three_boxes(), scores, one(5), onef(0.5f), onef(0.95f)})[0], {0, 3}, {});
  expect_ints(run(nms, {three_boxes(), scores})[0], {0, 3}, {});
}

TEST(RefDynamic, NonMaxSuppressionCenterPointBoxes) {
  // [x_center, y_center, w, h]: boxes 0 and 1 overlap (IoU 1/3), 2 is apart.
  Tensor boxes = make({1, 3, 4}, {0.5f, 0.5f, 1, 1, 1, 0.5f, 1, 1, 5, 5, 1, 1});
  Tensor scores = make({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  Node centers = node_of(Op::NonMaxSuppression, 11, {{"center_point_box", int64_t{1}}});
  expect_ints(run(centers, {boxes, scores, one(3), onef(0.3f), Tensor()})[0], {2, 3}, {0, 0, 0, 0, 0, 2});
  expect_ints(run(centers, {boxes, scores, one(3), onef(0.4f), Tensor()})[0], {3, 3}, {0, 0, 0, 0, 0, 1, 0, 0, 2});
}

TEST(RefDynamic, NonMaxSuppressionBadInputs) {
  Node nms = node_of(Op::NonMaxSuppression, 11);
  Tensor scores = make({1, 1, 3}, {0.9f, 0.8f, 0.7f});
  expect_error(nms, {make({1, 3, 2}, std::vector<float>(6)), scores}, "boxes must be [batches, boxes, 4], got [1, 3, 2]");
  expect_error(nms, {three_boxes(), make({1, 1, 2}, {0.9f, 0.8f})}, "scores must be [batches, classes, boxes]");
  expect_error(node_of(Op::NonMaxSuppression, 11, {{"center_point_box", int64_t{2}}}), {three_boxes(), scores},
               "center_point_box must be 0 or 1");
  expect_error(nms, {three_boxes(), scores, make({2}, {1, 2})}, "max_output_boxes_per_class must hold one int64");
}

// Unknown values make the shape data-dependent: the distinct error the engine plans per run on.
TEST(RefDynamic, RunTimeValuesThrowDataDependentShape) {
  Node nz = node_of(Op::NonZero, 13);
  std::vector<TensorType> types = {{DType::Float32, {2, 2}}};
  std::vector<const Tensor*> consts = {nullptr};
  EXPECT_THROW(op_info(nz.op).infer(InferContext{nz, types, consts}), DataDependentShape);
  // Compress needs only the condition: data known at run time is fine.
  Node c = node_of(Op::Compress, 11, {{"axis", int64_t{0}}});
  Tensor cond = make_bool({2}, {true, false});
  std::vector<TensorType> ctypes = {{DType::Float32, {2, 3}}, {DType::Bool, {2}}};
  std::vector<const Tensor*> cconsts = {nullptr, &cond};
  EXPECT_EQ(op_info(c.op).infer(InferContext{c, ctypes, cconsts})[0].dims, (Dims{1, 3}));
  cconsts = {nullptr, nullptr};
  EXPECT_THROW(op_info(c.op).infer(InferContext{c, ctypes, cconsts}), DataDependentShape);
}

// x float [2, 3] and s int64 [2] -> NonZero(x) -> Transpose -> idx; Reshape(x, s) -> y. Without
// `reshape`, only x and idx.
// A graph input or output of `type` and fixed `dims`.
void io(onnx::ValueInfoProto* vi, const char* name, int type, Dims dims) {
  vi->set_name(name);
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(type);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

// The graph of `m`, an opset-13 model.
onnx::GraphProto* opset13_graph(onnx::ModelProto& m, const char* name) {
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name(name);
  return g;
}

std::string nonzero_reshape_model(bool reshape = true) {
  onnx::ModelProto m;
  auto* g = opset13_graph(m, "dynamic");
  io(g->add_input(), "x", onnx::TensorProto::FLOAT, {2, 3});
  io(g->add_output(), "idx", onnx::TensorProto::INT64, {});
  if (reshape) {
    io(g->add_input(), "s", onnx::TensorProto::INT64, {2});
    io(g->add_output(), "y", onnx::TensorProto::FLOAT, {});
  }
  for (auto& vi : *g->mutable_output()) vi.mutable_type()->mutable_tensor_type()->clear_shape();
  auto node = [&](const char* op, std::vector<const char*> in, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(std::string(op) + "_" + out);
    for (const char* i : in) n->add_input(i);
    n->add_output(out);
  };
  node("NonZero", {"x"}, "nz");
  node("Transpose", {"nz"}, "idx");
  if (reshape) node("Reshape", {"x", "s"}, "y");
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

TEST(RefDynamic, SessionPlannedPerRunWhenShapesDependOnInputs) {
  Engine engine = Engine::load_bytes(nonzero_reshape_model());
  for (bool reference : {true, false}) {
    SessionOptions options;
    options.reference = reference;
    Session session = engine.session({{"x", {2, 3}}, {"s", {2}}}, options);
    EXPECT_NE(planned_per_run(session).find("NonZero"), std::string::npos) << planned_per_run(session);
    EXPECT_EQ(session.kernels_per_inference(), 0u);
    EXPECT_THROW(plan_of(session), Error);
    auto a = session.run({{"x", make({2, 3}, {0, 1, 0, 2, 0, 3})}, {"s", make_i64({2}, {3, 2})}});
    expect_ints(a.at("idx"), {3, 2}, {0, 1, 1, 0, 1, 2});
    EXPECT_EQ(a.at("y").dims(), (Dims{3, 2}));
    // Other values: another plan and other shapes.
    auto b = session.run({{"x", make({2, 3}, {5, 0, 0, 0, 0, 0})}, {"s", make_i64({2}, {6, 1})}});
    expect_ints(b.at("idx"), {1, 2}, {0, 0});
    EXPECT_EQ(b.at("y").dims(), (Dims{6, 1}));
    EXPECT_EQ(test::values<float>(b.at("y")), (std::vector<float>{5, 0, 0, 0, 0, 0}));
    // The last run's plan: everything folded, its values held as constants.
    EXPECT_EQ(session.kernels_per_inference(), 0u);
    EXPECT_GT(session.memory().weights_bytes, 0u);
    try {
      session.run({{"x", make({3, 2}, {0, 0, 0, 0, 0, 0})}, {"s", make_i64({2}, {6, 1})}});
      FAIL() << "expected an error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("input 'x' must be float32 [2, 3], got float32 [3, 2]"), std::string::npos)
          << e.what();
    }
  }
  // With the shape input frozen the session still plans per run: NonZero's count is unknown.
  SessionOptions frozen;
  frozen.frozen_inputs["s"] = make_i64({2}, {3, 2});
  Session s = engine.session({{"x", {2, 3}}, {"s", {2}}}, frozen);
  EXPECT_FALSE(planned_per_run(s).empty());
  EXPECT_THROW(s.run({{"x", make({2, 3}, {1, 1, 1, 1, 1, 1})}, {"s", make_i64({2}, {6, 1})}}), Error);
}

// y = use_w ? x W : Concat(x, x) (outputs of different shapes, so the branch taken decides the
// plan), as a merged decoder's If on use_cache_branch does.
std::string flag_branch_model() {
  onnx::ModelProto m;
  auto* g = opset13_graph(m, "flag_branch");
  io(g->add_input(), "x", onnx::TensorProto::FLOAT, {2, 4});
  io(g->add_input(), "use_w", onnx::TensorProto::BOOL, {});
  io(g->add_output(), "y", onnx::TensorProto::FLOAT, {});
  g->mutable_output(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  w->add_dims(4);
  for (int i = 0; i < 16; ++i) w->add_float_data(i % 5 == 0 ? 1.f : 0.25f * static_cast<float>(i % 3));
  auto branch = [&](onnx::GraphProto* b, const char* op) {
    b->set_name(op);
    auto* n = b->add_node();
    n->set_op_type(op);
    n->add_input("x");
    n->add_input(std::string(op) == "MatMul" ? "W" : "x");
    n->add_output(std::string("y_") + op);
    if (std::string(op) == "Concat") {
      auto* a = n->add_attribute();
      a->set_name("axis");
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(0);
    }
    b->add_output()->set_name(std::string("y_") + op);
    b->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  };
  auto* node = g->add_node();
  node->set_op_type("If");
  node->set_name("branch");
  node->add_input("use_w");
  node->add_output("y");
  for (auto [name, op] : {std::pair{"then_branch", "MatMul"}, std::pair{"else_branch", "Concat"}}) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::GRAPH);
    branch(a->mutable_g(), op);
  }
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

TEST(RefDynamic, ABranchOnAFlagKeepsItsFastKernelsAndItsPlanWhileTheFlagRepeats) {
  Engine engine = Engine::load_bytes(flag_branch_model());
  Session session = engine.session({{"x", {2, 4}}, {"use_w", {}}});
  EXPECT_FALSE(planned_per_run(session).empty());
  Tensor on(DType::Bool, {}), off(DType::Bool, {});
  on.data<bool>()[0] = true;
  const Tensor x1 = make({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8}), x2 = make({2, 4}, {-1, 0, 2, 0.5f, 3, 1, -2, 4});
  SessionOptions reference;
  reference.reference = true;
  Session truth = engine.session({{"x", {2, 4}}, {"use_w", {}}}, reference);
  auto a = session.run({{"x", x1}, {"use_w", on}});
  const Plan* planned = &plan_of(session);
  // Only the flag was frozen: the MatMul runs a kernel instead of folding into a constant.
  EXPECT_GT(session.kernels_per_inference(), 0u);
  auto b = session.run({{"x", x2}, {"use_w", on}});
  EXPECT_EQ(&plan_of(session), planned) << "new x values planned again";
  EXPECT_EQ(test::values<float>(a.at("y")), test::values<float>(truth.run({{"x", x1}, {"use_w", on}}).at("y")));
  EXPECT_EQ(test::values<float>(b.at("y")), test::values<float>(truth.run({{"x", x2}, {"use_w", on}}).at("y")));
  auto c = session.run({{"x", x1}, {"use_w", off}});
  EXPECT_EQ(c.at("y").dims(), (Dims{4, 4}));
  EXPECT_EQ(test::values<float>(c.at("y")), test::values<float>(truth.run({{"x", x1}, {"use_w", off}}).at("y")));
}

TEST(RefDynamic, ProfileSaysTheModelIsPlannedPerRun) {
  Engine engine = Engine::load_bytes(nonzero_reshape_model(false));
  ProfileOptions options;
  options.runs = 2;
  options.warmup = 0;
  ProfileReport report = profile_model(engine, {{"x", {2, 3}}}, options, Ceilings{});
  EXPECT_NE(report.planned_per_run.find("NonZero"), std::string::npos) << report.planned_per_run;
  EXPECT_NE(profile_table(report).find("planned per run"), std::string::npos);
  EXPECT_EQ(report.kernels_per_inference, 0u);  // everything folded for the sample values
}

}  // namespace
}  // namespace fusor
