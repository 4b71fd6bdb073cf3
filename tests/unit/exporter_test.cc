// The exporter writes fused graphs that the importer reads back as the same fused nodes (kind,
// name, attributes, body, nested bodies) and that compute the same outputs; symbolic dims
// survive; malformed fused nodes and functions fail with one clear line.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <functional>

#include "fused_vs_reference.h"
#include "graph_builder.h"
#include "ir/bind.h"
#include "ir/graph_edit.h"
#include "kernels/ref/reference.h"
#include "onnx/exporter.h"
#include "onnx/importer.h"
#include "passes/pipeline.h"

namespace fusor {
namespace {

Tensor scalar(float v) {
  Tensor t(DType::Float32, {});
  *t.data<float>() = v;
  return t;
}

Tensor filled(Dims dims, float scale) {
  Tensor t(DType::Float32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = scale * std::sin(0.37f * static_cast<float>(i) + 0.1f);
  return t;
}

// x [batch, 8] -> decomposed LayerNorm (gamma, beta) -> erf GELU -> y, with symbolic batch.
std::shared_ptr<Graph> layer_norm_gelu() {
  test::GraphBuilder b(18);  // ReduceMean takes its axes as an input from opset 18
  int x = b.input("x", DType::Float32, Shape{Dim{-1, "batch"}, Dim{8, ""}});
  int axes = b.constant("axes", [] {
    Tensor t(DType::Int64, {1});
    *t.data<int64_t>() = -1;
    return t;
  }());
  std::map<std::string, Attribute> keep = {{"keepdims", int64_t{1}}};
  int mean = b.node(Op::ReduceMean, {x, axes}, "mean", DType::Float32, keep);
  int c = b.node(Op::Sub, {x, mean}, "centered");
  int sq = b.node(Op::Pow, {c, b.constant("two", scalar(2))}, "sq");
  int var = b.node(Op::ReduceMean, {sq, axes}, "var", DType::Float32, keep);
  int ve = b.node(Op::Add, {var, b.constant("eps", scalar(1e-5f))}, "var_eps");
  int sd = b.node(Op::Sqrt, {ve}, "sd");
  int n = b.node(Op::Div, {c, sd}, "normed");
  int g = b.node(Op::Mul, {n, b.constant("gamma", filled({8}, 1.0f))}, "scaled");
  int ln = b.node(Op::Add, {g, b.constant("beta", filled({8}, 0.5f))}, "ln");
  int d = b.node(Op::Div, {ln, b.constant("sqrt2", scalar(1.4142135f))}, "gd");
  int e = b.node(Op::Erf, {d}, "ge");
  int p = b.node(Op::Add, {e, b.constant("one", scalar(1))}, "gp");
  int m = b.node(Op::Mul, {ln, p}, "gm");
  int y = b.node(Op::Mul, {m, b.constant("half", scalar(0.5f))}, "y");
  return b.finish({y});
}

std::shared_ptr<const Graph> fused(const Graph& g, int64_t batch) {
  std::vector<TensorType> types = {{DType::Float32, {batch, 8}}};
  std::vector<Tensor> frozen(1);
  return run_fusion_passes(g, types, frozen, FusionConfig{}, ref::evaluate).graph;
}

std::shared_ptr<const Graph> round_trip(const Graph& g) {
  return std::make_shared<const Graph>(import_onnx_bytes(export_onnx_bytes(g), ""));
}

// The reference result: binding with every input frozen folds the whole graph.
Tensor reference_output(const Graph& g, const Tensor& x) {
  std::vector<TensorType> types = {{x.dtype(), x.dims()}};
  std::vector<Tensor> frozen = {x};
  Binding b = bind_graph(g, types, frozen, ref::evaluate);
  return b.constants[static_cast<size_t>(g.outputs[0])];
}

void expect_equal(const Tensor& a, const Tensor& b, float tol) {
  ASSERT_EQ(a.dims(), b.dims());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], tol) << "at " << i;
}

// Fused nodes' attributes are scalars, strings and lists (no tensors).
void expect_same_attrs(const Node& a, const Node& b) {
  ASSERT_EQ(a.attrs.size(), b.attrs.size()) << a.name;
  for (const auto& attr : a.attrs) {
    // References, not a structured binding: clang 14's lambdas cannot capture bindings.
    const std::string& key = attr.first;
    const Attribute& value = attr.second;
    ASSERT_TRUE(b.has_attr(key)) << a.name << " " << key;
    const Attribute& other = b.attrs.at(key);
    ASSERT_EQ(value.index(), other.index()) << a.name << " " << key;
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (!std::is_same_v<T, Tensor>) EXPECT_EQ(v, std::get<T>(other)) << a.name << " " << key;
        },
        value);
  }
}

std::vector<const Node*> fused_nodes(const Graph& g) {
  std::vector<const Node*> out;
  for (const Node& n : g.nodes)
    if (n.op == Op::Fused) out.push_back(&n);
  return out;
}

TEST(Exporter, FusedNodesRoundTripWithKindNameAttributesAndBody) {
  auto source = layer_norm_gelu();
  auto f = fused(*source, 2);
  ASSERT_EQ(fused_nodes(*f).size(), 2u) << "LayerNorm and Gelu should fuse";
  auto back = round_trip(*f);
  auto a = fused_nodes(*f), b = fused_nodes(*back);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(b[i]->op_type, a[i]->op_type);
    EXPECT_EQ(b[i]->name, a[i]->name);
    EXPECT_EQ(b[i]->domain, "fusor");
    expect_same_attrs(*b[i], *a[i]);
    ASSERT_TRUE(b[i]->body);
    EXPECT_EQ(b[i]->body->nodes.size(), a[i]->body->nodes.size());
    EXPECT_EQ(b[i]->inputs.size(), a[i]->inputs.size());
    EXPECT_EQ(b[i]->body->inputs.size(), b[i]->inputs.size());
  }
  EXPECT_EQ(back->nodes.size(), f->nodes.size());
  // Same numbers as the source graph, at the fusing batch and at another one.
  for (int64_t batch : {2, 5}) {
    Tensor x = filled({batch, 8}, 2.0f);
    expect_equal(reference_output(*back, x), reference_output(*source, x), 1e-6f);
  }
}

TEST(Exporter, SymbolicDimsAndConstantsSurvive) {
  auto f = fused(*layer_norm_gelu(), 2);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(export_onnx_bytes(*f)));
  EXPECT_GE(m.ir_version(), 8);
  ASSERT_EQ(m.graph().input_size(), 1);
  const auto& dims = m.graph().input(0).type().tensor_type().shape().dim();
  ASSERT_EQ(dims.size(), 2);
  EXPECT_EQ(dims[0].dim_param(), "batch");
  EXPECT_EQ(dims[1].dim_value(), 8);
  for (const auto& n : m.graph().node()) EXPECT_NE(n.op_type(), "Constant");
  EXPECT_GT(m.graph().initializer_size(), 0);
  EXPECT_EQ(m.functions_size(), 2);
  for (const auto& fn : m.functions()) {
    EXPECT_EQ(fn.domain(), "fusor");
    EXPECT_EQ(fn.node_size() > 0, true);
  }
  bool imports_fusor = false;
  for (const auto& o : m.opset_import()) imports_fusor |= o.domain() == "fusor" && o.version() == 1;
  EXPECT_TRUE(imports_fusor);
  auto back = round_trip(*f);
  const Value& x = back->values[static_cast<size_t>(back->inputs[0])];
  ASSERT_TRUE(x.shape);
  EXPECT_EQ((*x.shape)[0].symbol, "batch");
}

TEST(Exporter, FastPlanOfTheReadBackModelMatchesTheReference) {
  auto source = layer_norm_gelu();
  auto back = round_trip(*fused(*source, 2));
  Tensor x = filled({3, 8}, 2.0f);
  Plan plan = test::fast_plan(back, {{"x", {3, 8}}});
  EXPECT_TRUE(test::outputs_agree(test::run_plan(plan, {{"x", x}}), {reference_output(*source, x)}));
}

TEST(Exporter, NestedBodiesBecomeNestedFunctions) {
  auto source = layer_norm_gelu();
  Graph g = *source;
  // Fuse the Gelu's first two nodes, then a set holding that fused node and the rest.
  auto index = [&](const std::string& name) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
      if (g.nodes[i].name == name) return static_cast<int>(i);
    return -1;
  };
  fuse_nodes(g, {index("Div_gd"), index("Erf_ge")}, "Inner", "inner");
  fuse_nodes(g, {index("inner"), index("Add_gp"), index("Mul_gm"), index("Mul_y")}, "Outer", "outer",
             {{"note", std::string("nested")}, {"ks", std::vector<int64_t>{1, 2}}});
  auto back = round_trip(g);
  auto outer = fused_nodes(*back);
  ASSERT_EQ(outer.size(), 1u);
  EXPECT_EQ(outer[0]->op_type, "Outer");
  EXPECT_EQ(outer[0]->attr_string("note", ""), "nested");
  EXPECT_EQ(outer[0]->attr_ints("ks"), (std::vector<int64_t>{1, 2}));
  auto inner = fused_nodes(*outer[0]->body);
  ASSERT_EQ(inner.size(), 1u);
  EXPECT_EQ(inner[0]->op_type, "Inner");
  EXPECT_EQ(inner[0]->name, "inner");
  ASSERT_TRUE(inner[0]->body);
  EXPECT_EQ(inner[0]->body->nodes.size(), 2u);
  Tensor x = filled({4, 8}, 1.5f);
  expect_equal(reference_output(*back, x), reference_output(*source, x), 1e-6f);
  // Writing the read-back graph again gives the same model.
  EXPECT_EQ(export_onnx_bytes(*back), export_onnx_bytes(*round_trip(*back)));
}

// A one-node model calling fusor function `callee`; `edit` breaks it in one way.
std::string model_with_function(const std::function<void(onnx::ModelProto&)>& edit) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* fo = m.add_opset_import();
  fo->set_domain("fusor");
  fo->set_version(1);
  auto* g = m.mutable_graph();
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* n = g->add_node();
  n->set_name("call");
  n->set_op_type("F_0");
  n->set_domain("fusor");
  n->add_input("x");
  n->add_output("y");
  auto* kind = n->add_attribute();
  kind->set_name("fusor_kind");
  kind->set_type(onnx::AttributeProto::STRING);
  kind->set_s("Elementwise");
  g->add_output()->set_name("y");
  auto* f = m.add_functions();
  f->set_name("F_0");
  f->set_domain("fusor");
  f->add_input("a");
  f->add_output("b");
  auto* fo2 = f->add_opset_import();
  fo2->set_version(17);
  auto* c = f->add_node();  // a constant inside the body: a Constant node
  c->set_op_type("Constant");
  c->add_output("k");
  auto* v = c->add_attribute();
  v->set_name("value_float");
  v->set_type(onnx::AttributeProto::FLOAT);
  v->set_f(3.0f);
  auto* mul = f->add_node();
  mul->set_op_type("Mul");
  mul->add_input("a");
  mul->add_input("k");
  mul->add_output("b");
  edit(m);
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

TEST(Importer, ReadsAHandWrittenFusedFunctionWithAConstantInside) {
  Graph g = import_onnx_bytes(model_with_function([](onnx::ModelProto&) {}), "");
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op, Op::Fused);
  EXPECT_EQ(g.nodes[0].op_type, "Elementwise");
  EXPECT_FALSE(g.nodes[0].has_attr("fusor_kind"));
  Tensor x = filled({2, 3}, 1.0f);
  Tensor y = reference_output(g, x);
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], 3.0f * x.data<float>()[i]);
  // The body's constant goes back out as a Constant node and reads in the same.
  Graph again = import_onnx_bytes(export_onnx_bytes(g), "");
  expect_equal(reference_output(again, x), y, 0);
}

void expect_error(const std::function<void(onnx::ModelProto&)>& edit, const std::string& fragment) {
  try {
    import_onnx_bytes(model_with_function(edit), "");
    FAIL() << "expected an error containing: " << fragment;
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TEST(Importer, MalformedFusedNodesFailWithOneLine) {
  expect_error([](auto& m) { m.mutable_functions(0)->set_name("G"); }, "no model-local function 'F_0'");
  expect_error([](auto& m) { m.mutable_functions(0)->set_domain("other"); }, "no model-local function");
  expect_error([](auto& m) { *m.add_functions() = m.functions(0); }, "defined twice");
  expect_error([](auto& m) { m.mutable_graph()->mutable_node(0)->add_input("x"); }, "its function 1 and 1");
  expect_error([](auto& m) { m.mutable_functions(0)->set_output(0, "nothing"); }, "'nothing' is not produced");
  expect_error([](auto& m) { m.mutable_functions(0)->mutable_node(1)->set_input(1, "outer"); },
               "input 'outer' is not defined");
  expect_error(
      [](auto& m) {
        auto* kind = m.mutable_graph()->mutable_node(0)->mutable_attribute(0);
        kind->set_type(onnx::AttributeProto::INT);
        kind->set_i(3);
      },
      "'fusor_kind' must be a non-empty string");
  expect_error(
      [](auto& m) {  // the function calls itself
        auto* self = m.mutable_functions(0)->add_node();
        self->set_op_type("F_0");
        self->set_domain("fusor");
        self->add_input("b");
        self->add_output("z");
      },
      "calls itself");
  expect_error(
      [](auto& m) {  // "Fused" is not an ONNX operator
        auto* n = m.mutable_graph()->mutable_node(0);
        n->set_domain("");
        n->set_op_type("Fused");
      },
      "unsupported operator");
}

TEST(Importer, DeeplySharedBodiesAreBounded) {
  // F_k calls F_{k+1} 40 times, 15 levels deep: a small file that would expand enormously.
  auto bytes = model_with_function([](onnx::ModelProto& m) {
    for (int k = 1; k < 15; ++k) {
      auto* f = m.add_functions();
      *f = m.functions(0);
      f->set_name("F_" + std::to_string(k));
    }
    for (int k = 0; k + 1 < 15; ++k) {
      auto* f = m.mutable_functions(k);
      for (int j = 0; j < 40; ++j) {
        auto* call = f->add_node();
        call->set_op_type("F_" + std::to_string(k + 1));
        call->set_domain("fusor");
        call->add_input("a");
        call->add_output("c" + std::to_string(j));
      }
    }
  });
  try {
    import_onnx_bytes(bytes, "");
    FAIL() << "expected the expansion bound";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expand to over"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fusor
