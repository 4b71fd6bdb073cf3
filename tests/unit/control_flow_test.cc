// If, Loop and Scan end to end: ONNX models built in memory, imported (subgraphs, outer-scope
// reads), planned and run by both executors, and the errors malformed subgraphs give.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "plan/inline_branches.h"

namespace fusor {
namespace {

using Names = std::initializer_list<const char*>;

void add_info(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list, const char* name, int elem,
              std::vector<int64_t> dims) {
  auto* vi = list->Add();
  vi->set_name(name);
  if (elem == 0) return;  // untyped: the importer and binding infer it
  auto* t = vi->mutable_type()->mutable_tensor_type();
  t->set_elem_type(elem);
  auto* shape = t->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

onnx::NodeProto* add_node(onnx::GraphProto& g, const char* op, Names inputs, Names outputs) {
  auto* n = g.add_node();
  n->set_op_type(op);
  n->set_name(std::string(op) + "_" + *outputs.begin());
  for (const char* i : inputs) n->add_input(i);
  for (const char* o : outputs) n->add_output(o);
  return n;
}

void set_int(onnx::NodeProto* n, const char* name, int64_t v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints(onnx::NodeProto* n, const char* name, std::vector<int64_t> v) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

void set_graph(onnx::NodeProto* n, const char* name, const onnx::GraphProto& g) {
  auto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::GRAPH);
  *a->mutable_g() = g;
}

void add_int64(onnx::GraphProto& g, const char* name, int64_t v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::INT64);
  t->add_int64_data(v);
}

void add_bool(onnx::GraphProto& g, const char* name, bool v) {
  auto* t = g.add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::BOOL);
  t->add_int32_data(v ? 1 : 0);
}

std::string model_bytes(const onnx::GraphProto& g, int opset) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  *m.mutable_graph() = g;
  return m.SerializeAsString();
}

Tensor floats(Dims dims, std::vector<float> v) {
  Tensor t(DType::Float32, std::move(dims));
  std::copy(v.begin(), v.end(), t.data<float>());
  return t;
}

Tensor boolean(bool v) {
  Tensor t(DType::Bool, {});
  *t.data<bool>() = v;
  return t;
}

std::vector<float> values(const Tensor& t) { return {t.data<float>(), t.data<float>() + t.numel()}; }

// Runs `bytes` on `feeds` in the reference and the fast executor; both must agree exactly with
// `want` (each output's values, by name). Inputs named in `frozen` are plan-time constants.
void expect_runs(const std::string& bytes, const std::map<std::string, Tensor>& feeds,
                 const std::map<std::string, std::vector<float>>& want, std::vector<std::string> frozen = {}) {
  Engine engine = Engine::load_bytes(bytes);
  std::map<std::string, Dims> dims;
  for (const auto& [name, t] : feeds) dims[name] = t.dims();
  for (bool reference : {true, false}) {
    SessionOptions options;
    options.reference = reference;
    for (const auto& name : frozen) options.frozen_inputs[name] = feeds.at(name);
    auto out = engine.session(dims, options).run(feeds);
    for (const auto& [name, expected] : want)
      EXPECT_EQ(values(out.at(name)), expected) << name << (reference ? " (reference)" : " (fast)");
  }
}

// The message of the Error loading and planning `bytes` throws ("" when none).
std::string error_of(const std::string& bytes, const std::map<std::string, Dims>& dims) {
  try {
    Engine engine = Engine::load_bytes(bytes);
    engine.session(dims);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// out = If(cond): then x * y, else y - x, where y = x + x; both branches read x and y from the
// enclosing graph.
onnx::GraphProto if_model(bool two_then_outputs = false, bool with_else = true) {
  onnx::GraphProto then_g, else_g, g;
  then_g.set_name("then");
  add_node(then_g, "Mul", {"x", "y"}, {"t"});
  add_info(then_g.mutable_output(), "t", 0, {});
  if (two_then_outputs) add_info(then_g.mutable_output(), "x", 0, {});
  else_g.set_name("else");
  add_node(else_g, "Sub", {"y", "x"}, {"e"});
  add_info(else_g.mutable_output(), "e", 0, {});
  g.set_name("if");
  add_info(g.mutable_input(), "cond", onnx::TensorProto::BOOL, {});
  add_info(g.mutable_input(), "x", onnx::TensorProto::FLOAT, {3});
  add_node(g, "Add", {"x", "x"}, {"y"});
  auto* n = add_node(g, "If", {"cond"}, {"out"});
  n->set_name("if");
  set_graph(n, "then_branch", then_g);
  if (with_else) set_graph(n, "else_branch", else_g);
  add_info(g.mutable_output(), "out", onnx::TensorProto::FLOAT, {3});
  return g;
}

TEST(ControlFlow, IfReadsOuterValuesInBothBranches) {
  const std::string bytes = model_bytes(if_model(), 13);
  const Tensor x = floats({3}, {1, 2, 3});
  expect_runs(bytes, {{"cond", boolean(true)}, {"x", x}}, {{"out", {2, 8, 18}}});
  expect_runs(bytes, {{"cond", boolean(false)}, {"x", x}}, {{"out", {1, 2, 3}}});
  // Frozen, the condition picks the branch at plan time (inlined); the results stay the same.
  expect_runs(bytes, {{"cond", boolean(true)}, {"x", x}}, {{"out", {2, 8, 18}}}, {"cond"});
  expect_runs(bytes, {{"cond", boolean(false)}, {"x", x}}, {{"out", {1, 2, 3}}}, {"cond"});
}

TEST(ControlFlow, ImportOrdersNodesBySubgraphReads) {
  // The If comes first in the file, before the Add that makes the `y` its branches read.
  onnx::GraphProto g = if_model();
  std::swap(*g.mutable_node(0), *g.mutable_node(1));
  expect_runs(model_bytes(g, 13), {{"cond", boolean(true)}, {"x", floats({3}, {1, 2, 3})}}, {{"out", {2, 8, 18}}});
}

TEST(ControlFlow, IfWithKnownConditionIsInlined) {
  auto graph = std::make_shared<const Graph>(import_onnx_bytes(model_bytes(if_model(), 13), ""));
  std::vector<TensorType> types{{DType::Bool, {}}, {DType::Float32, {3}}};
  std::vector<Tensor> frozen{boolean(false), Tensor()};
  auto inlined = inline_known_branches(graph, types, frozen);
  auto has = [&](Op op) {
    return std::any_of(inlined->nodes.begin(), inlined->nodes.end(), [&](const Node& n) { return n.op == op; });
  };
  EXPECT_FALSE(has(Op::If));
  EXPECT_TRUE(has(Op::Sub));
  EXPECT_FALSE(has(Op::Mul));
  // Unknown condition: the If stays.
  frozen[0] = Tensor();
  EXPECT_EQ(inline_known_branches(graph, types, frozen), graph);
}

TEST(ControlFlow, ExportKeepsSubgraphsAndOuterReads) {
  const Graph g = import_onnx_bytes(model_bytes(if_model(), 13), "");
  const std::string exported = export_onnx_bytes(g);
  expect_runs(exported, {{"cond", boolean(true)}, {"x", floats({3}, {1, 2, 3})}}, {{"out", {2, 8, 18}}});
}

// An elementwise chain a = x * 2, b = a + 1, c = relu(b) that fusion groups, while the If's
// branch reads the intermediate `a` from the enclosing graph: fusion must keep `a` available.
TEST(ControlFlow, FusionKeepsValuesSubgraphsRead) {
  onnx::GraphProto then_g, else_g, g;
  then_g.set_name("then");
  add_node(then_g, "Add", {"a", "c"}, {"t"});
  add_info(then_g.mutable_output(), "t", 0, {});
  else_g.set_name("else");
  add_node(else_g, "Identity", {"c"}, {"e"});
  add_info(else_g.mutable_output(), "e", 0, {});
  g.set_name("fused");
  add_info(g.mutable_input(), "cond", onnx::TensorProto::BOOL, {});
  add_info(g.mutable_input(), "x", onnx::TensorProto::FLOAT, {4});
  for (auto [name, v] : {std::pair{"two", 2.0f}, std::pair{"one", 1.0f}}) {
    auto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(v);
  }
  add_node(g, "Mul", {"x", "two"}, {"a"});
  add_node(g, "Add", {"a", "one"}, {"b"});
  add_node(g, "Relu", {"b"}, {"c"});
  auto* n = add_node(g, "If", {"cond"}, {"out"});
  set_graph(n, "then_branch", then_g);
  set_graph(n, "else_branch", else_g);
  add_info(g.mutable_output(), "out", onnx::TensorProto::FLOAT, {4});
  const std::string bytes = model_bytes(g, 13);
  const Tensor x = floats({4}, {-2, -1, 0, 1});
  EXPECT_FALSE(Engine::load_bytes(bytes).session({{"cond", {}}, {"x", {4}}}).fusion_items().empty());
  expect_runs(bytes, {{"cond", boolean(true)}, {"x", x}}, {{"out", {-4, -2, 1, 5}}});
  expect_runs(bytes, {{"cond", boolean(false)}, {"x", x}}, {{"out", {0, 0, 1, 3}}});
}

// Loop(M, cond = true, s = x): s += x each iteration (x from the enclosing graph), scan output
// s * iteration number. The body's carried input has no declared type.
std::string loop_model(int64_t trips) {
  onnx::GraphProto body, g;
  body.set_name("body");
  add_info(body.mutable_input(), "i", onnx::TensorProto::INT64, {});
  add_info(body.mutable_input(), "c_in", onnx::TensorProto::BOOL, {});
  add_info(body.mutable_input(), "s_in", 0, {});
  add_node(body, "Identity", {"c_in"}, {"c_out"});
  add_node(body, "Add", {"s_in", "x"}, {"s_out"});
  set_int(add_node(body, "Cast", {"i"}, {"fi"}), "to", onnx::TensorProto::FLOAT);
  add_node(body, "Mul", {"s_out", "fi"}, {"scaled"});
  for (const char* o : {"c_out", "s_out", "scaled"}) add_info(body.mutable_output(), o, 0, {});
  g.set_name("loop");
  add_info(g.mutable_input(), "x", onnx::TensorProto::FLOAT, {2});
  add_int64(g, "M", trips);
  add_bool(g, "go", true);
  set_graph(add_node(g, "Loop", {"M", "go", "x"}, {"final", "scans"}), "body", body);
  add_info(g.mutable_output(), "final", onnx::TensorProto::FLOAT, {2});
  add_info(g.mutable_output(), "scans", onnx::TensorProto::FLOAT, {});
  return model_bytes(g, 13);
}

TEST(ControlFlow, LoopCarriesStateAndStacksScanOutputs) {
  expect_runs(loop_model(3), {{"x", floats({2}, {1, 2})}}, {{"final", {4, 8}}, {"scans", {0, 0, 3, 6, 8, 16}}});
}

TEST(ControlFlow, LoopWithoutIterationsKeepsItsInitialState) {
  expect_runs(loop_model(0), {{"x", floats({2}, {1, 2})}}, {{"final", {1, 2}}, {"scans", {}}});
  auto out = Engine::load_bytes(loop_model(0)).session({{"x", {2}}}).run({{"x", floats({2}, {1, 2})}});
  EXPECT_EQ(out.at("scans").dims(), (Dims{0, 2}));
}

// Loop(M = 10) whose condition output is i < 2 (known at plan time in every iteration): three
// iterations. Inside, an If on i < 1 reads x from two scopes out.
TEST(ControlFlow, NestedIfInsideLoopReadsTheOutermostGraph) {
  onnx::GraphProto then_g, else_g, body, g;
  then_g.set_name("then");
  add_node(then_g, "Add", {"x", "x"}, {"t"});
  add_info(then_g.mutable_output(), "t", 0, {});
  else_g.set_name("else");
  add_node(else_g, "Mul", {"x", "x"}, {"e"});
  add_info(else_g.mutable_output(), "e", 0, {});
  body.set_name("body");
  add_info(body.mutable_input(), "i", onnx::TensorProto::INT64, {});
  add_info(body.mutable_input(), "c_in", onnx::TensorProto::BOOL, {});
  add_node(body, "Less", {"i", "one"}, {"first"});
  add_node(body, "Less", {"i", "two"}, {"c_out"});
  auto* n = add_node(body, "If", {"first"}, {"r"});
  set_graph(n, "then_branch", then_g);
  set_graph(n, "else_branch", else_g);
  for (const char* o : {"c_out", "r"}) add_info(body.mutable_output(), o, 0, {});
  g.set_name("nested");
  add_info(g.mutable_input(), "x", onnx::TensorProto::FLOAT, {2});
  add_int64(g, "M", 10);
  add_int64(g, "one", 1);
  add_int64(g, "two", 2);
  set_graph(add_node(g, "Loop", {"M", ""}, {"scans"}), "body", body);
  add_info(g.mutable_output(), "scans", onnx::TensorProto::FLOAT, {3, 2});
  expect_runs(model_bytes(g, 13), {{"x", floats({2}, {1, 2})}}, {{"scans", {2, 4, 1, 4, 1, 4}}});
}

// A running sum over the scanned axis: body (sum_in, next) -> (sum_out, sum_out).
onnx::GraphProto sum_body() {
  onnx::GraphProto body;
  body.set_name("body");
  add_info(body.mutable_input(), "sum_in", onnx::TensorProto::FLOAT, {2});
  add_info(body.mutable_input(), "next", onnx::TensorProto::FLOAT, {2});
  add_node(body, "Add", {"sum_in", "next"}, {"sum_out"});
  add_node(body, "Identity", {"sum_out"}, {"scan_out"});
  add_info(body.mutable_output(), "sum_out", 0, {});
  add_info(body.mutable_output(), "scan_out", 0, {});
  return body;
}

std::string scan9_model(bool reverse_output) {
  onnx::GraphProto g;
  g.set_name("scan9");
  add_info(g.mutable_input(), "init", onnx::TensorProto::FLOAT, {2});
  add_info(g.mutable_input(), "x", onnx::TensorProto::FLOAT, {2, 3});
  auto* n = add_node(g, "Scan", {"init", "x"}, {"sum", "scan"});
  set_graph(n, "body", sum_body());
  set_int(n, "num_scan_inputs", 1);
  set_ints(n, "scan_input_axes", {1});
  set_ints(n, "scan_input_directions", {1});
  set_ints(n, "scan_output_axes", {1});
  if (reverse_output) set_ints(n, "scan_output_directions", {1});
  add_info(g.mutable_output(), "sum", onnx::TensorProto::FLOAT, {2});
  add_info(g.mutable_output(), "scan", onnx::TensorProto::FLOAT, {2, 3});
  return model_bytes(g, 11);
}

TEST(ControlFlow, ScanOpset9HonoursAxesAndDirections) {
  const std::map<std::string, Tensor> feeds{{"init", floats({2}, {0, 0})}, {"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})}};
  // Columns taken last to first: [3,6], [2,5], [1,4]; running sums stacked as columns, in
  // iteration order or (reverse output) last iteration first.
  expect_runs(scan9_model(false), feeds, {{"sum", {6, 15}}, {"scan", {3, 5, 6, 6, 11, 15}}});
  expect_runs(scan9_model(true), feeds, {{"sum", {6, 15}}, {"scan", {6, 5, 3, 15, 11, 6}}});
}

TEST(ControlFlow, ScanOpset8ScansEachBatchEntry) {
  onnx::GraphProto g;
  g.set_name("scan8");
  add_info(g.mutable_input(), "init", onnx::TensorProto::FLOAT, {2, 2});
  add_info(g.mutable_input(), "x", onnx::TensorProto::FLOAT, {2, 3, 2});
  auto* n = add_node(g, "Scan", {"", "init", "x"}, {"sum", "scan"});
  set_graph(n, "body", sum_body());
  set_int(n, "num_scan_inputs", 1);
  add_info(g.mutable_output(), "sum", onnx::TensorProto::FLOAT, {2, 2});
  add_info(g.mutable_output(), "scan", onnx::TensorProto::FLOAT, {2, 3, 2});
  expect_runs(model_bytes(g, 8),
              {{"init", floats({2, 2}, {0, 0, 0, 0})}, {"x", floats({2, 3, 2}, {1, 2, 3, 4, 5, 6, 1, 1, 1, 1, 1, 1})}},
              {{"sum", {9, 12, 3, 3}}, {"scan", {1, 2, 4, 6, 9, 12, 1, 1, 2, 2, 3, 3}}});
}

void expect_one_line_error(const std::string& bytes, const std::map<std::string, Dims>& dims, const char* part) {
  const std::string what = error_of(bytes, dims);
  EXPECT_NE(what.find(part), std::string::npos) << what;
  EXPECT_EQ(what.find('\n'), std::string::npos) << what;
}

TEST(ControlFlow, MalformedSubgraphsGiveOneLineErrors) {
  const std::map<std::string, Dims> if_dims{{"cond", {}}, {"x", {3}}};
  expect_one_line_error(model_bytes(if_model(true), 13), if_dims, "then_branch has 2 outputs, the node 1");
  expect_one_line_error(model_bytes(if_model(false, false), 13), if_dims, "needs graph attribute 'else_branch'");

  onnx::GraphProto undefined = if_model();
  undefined.mutable_node(1)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_input(1, "nowhere");
  expect_one_line_error(model_bytes(undefined, 13), if_dims, "input 'nowhere' is not defined");

  onnx::GraphProto on_add = if_model();
  set_graph(on_add.mutable_node(0), "body", if_model().node(1).attribute(0).g());
  expect_one_line_error(model_bytes(on_add, 13), if_dims, "only If, Loop and Scan take graphs");

  // A Loop whose condition output depends on the data: its iteration count is not plan-time.
  onnx::GraphProto body, g;
  body.set_name("body");
  add_info(body.mutable_input(), "i", onnx::TensorProto::INT64, {});
  add_info(body.mutable_input(), "c_in", onnx::TensorProto::BOOL, {});
  add_info(body.mutable_input(), "s_in", onnx::TensorProto::FLOAT, {1});
  add_node(body, "Add", {"s_in", "s_in"}, {"s_out"});
  add_node(body, "Less", {"s_out", "limit"}, {"c_out"});
  for (const char* o : {"c_out", "s_out"}) add_info(body.mutable_output(), o, 0, {});
  g.set_name("loop");
  add_info(g.mutable_input(), "s", onnx::TensorProto::FLOAT, {1});
  add_info(g.mutable_input(), "limit", onnx::TensorProto::FLOAT, {1});
  set_graph(add_node(g, "Loop", {"", "", "s"}, {"final"}), "body", body);
  add_info(g.mutable_output(), "final", onnx::TensorProto::FLOAT, {1});
  expect_one_line_error(model_bytes(g, 13), {{"s", {1}}, {"limit", {1}}}, "depends on the data");
}

}  // namespace
}  // namespace fusor
