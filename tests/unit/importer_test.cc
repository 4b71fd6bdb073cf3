#include <gtest/gtest.h>
#include <sys/stat.h>
#include <onnx/onnx_pb.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fusor/engine.h"
#include "kernels/cpu/backend.h"
#include "onnx/importer.h"
#include "onnx_proto_builder.h"
#include "plan/plan.h"

namespace fusor {
namespace {

namespace fs = std::filesystem;

// y = MatMul(x, W) + b with symbolic batch; W optionally stored as external data.
onnx::ModelProto matmul_model(const fs::path& dir, bool external) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  g->set_name("g");
  auto* x = g->add_input();
  x->set_name("x");
  auto* xt = x->mutable_type()->mutable_tensor_type();
  xt->set_elem_type(onnx::TensorProto::FLOAT);
  xt->mutable_shape()->add_dim()->set_dim_param("batch");
  xt->mutable_shape()->add_dim()->set_dim_value(2);
  auto* w = g->add_initializer();
  w->set_name("W");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(2);
  w->add_dims(3);
  std::vector<float> wv{1, 2, 3, 4, 5, 6};
  if (external) {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    std::vector<float> padded{9, 9};  // data starts at offset 8
    padded.insert(padded.end(), wv.begin(), wv.end());
    f.write(reinterpret_cast<const char*>(padded.data()), static_cast<std::streamsize>(padded.size() * 4));
    w->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add_kv = [&](const char* k, const std::string& v) {
      auto* e = w->add_external_data();
      e->set_key(k);
      e->set_value(v);
    };
    add_kv("location", "weights.bin");
    add_kv("offset", "8");
    add_kv("length", "24");
  } else {
    for (float v : wv) w->add_float_data(v);
  }
  auto* c = g->add_node();
  c->set_op_type("Constant");
  c->add_output("b");
  auto* attr = c->add_attribute();
  attr->set_name("value_floats");
  attr->set_type(onnx::AttributeProto::FLOATS);
  for (float v : {0.5f, 0.25f, 0.125f}) attr->add_floats(v);
  auto* mm = g->add_node();
  mm->set_op_type("MatMul");
  mm->add_input("x");
  mm->add_input("W");
  mm->add_output("xw");
  auto* add = g->add_node();
  add->set_op_type("Add");
  add->add_input("xw");
  add->add_input("b");
  add->add_output("y");
  g->add_output()->set_name("y");
  return m;
}

std::string write_model(const onnx::ModelProto& m, const fs::path& dir) {
  fs::path p = dir / "model.onnx";
  std::ofstream f(p, std::ios::binary);
  m.SerializeToOstream(&f);
  return p.string();
}

class ImporterTest : public ::testing::TestWithParam<bool> {
 protected:
  fs::path dir = fs::temp_directory_path() / ("fusor_importer_" + std::to_string(::getpid()) +
                                              (GetParam() ? "_ext" : "_int"));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_P(ImporterTest, LoadsInitializersConstantsAndSymbolicDims) {
  std::string path = write_model(matmul_model(dir, GetParam()), dir);
  Engine engine = Engine::load(path);
  ASSERT_EQ(engine.inputs().size(), 1u);
  EXPECT_EQ(engine.inputs()[0].symbols[0], "batch");
  EXPECT_EQ(engine.node_count(), 3u);  // Constant, MatMul, Add
  auto dims = engine.bind_dims({}, 2, 0);
  EXPECT_EQ(dims.at("x"), (Dims{2, 2}));
  for (bool reference : {true, false}) {
    Session s = engine.session(dims, {reference});
    Tensor x(DType::Float32, {2, 2});
    float xv[] = {1, 0, 0, 1};
    std::copy(xv, xv + 4, x.data<float>());
    Tensor y = s.run({{"x", x}}).at("y");
    ASSERT_EQ(y.dims(), (Dims{2, 3}));
    float want[] = {1.5f, 2.25f, 3.125f, 4.5f, 5.25f, 6.125f};
    for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;
  }
}

TEST_P(ImporterTest, LoadsFromBytesWithExternalDataInTheBaseFolder) {
  std::string bytes;
  ASSERT_TRUE(matmul_model(dir, GetParam()).SerializeToString(&bytes));
  Engine engine = Engine::load_bytes(bytes, dir.string());
  Session s = engine.session({{"x", {1, 2}}});
  Tensor x(DType::Float32, {1, 2});
  x.data<float>()[0] = 1;
  Tensor y = s.run({{"x", x}}).at("y");
  EXPECT_EQ(y.data<float>()[2], 3.125f);  // W[0][2] + b[2]
  if (GetParam()) {  // elsewhere the weights file is not found
    fs::path other = dir / "elsewhere";
    fs::create_directories(other);
    try {
      Engine::load_bytes(bytes, other.string());
      FAIL();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot open external data file"), std::string::npos) << e.what();
      EXPECT_EQ(e.kind(), ErrorKind::InvalidModel);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Storage, ImporterTest, ::testing::Values(false, true));

TEST(Importer, ExternalDataOutsideTheModelFolderIsRejected) {
  fs::path dir = fs::temp_directory_path() / ("fusor_escape_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto m = matmul_model(dir, true);
  m.mutable_graph()->mutable_initializer(0)->mutable_external_data(0)->set_value("../../etc/passwd");
  std::string path = write_model(m, dir);
  EXPECT_THROW(
      {
        try {
          Engine::load(path);
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("outside the model folder"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
  fs::remove_all(dir);
}

// Each external location, offset and length is checked before anything is read: a directory
// read as zeros, a FIFO blocked forever, and a file longer than the tensor was read whole first.
TEST(Importer, ExternalDataIsCheckedBeforeItIsRead) {
  fs::path dir = fs::temp_directory_path() / ("fusor_external_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "folder");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  auto expect = [&](const std::vector<std::pair<std::string, std::string>>& fields, const std::string& message) {
    auto m = matmul_model(dir, true);
    auto* w = m.mutable_graph()->mutable_initializer(0);
    w->clear_external_data();
    for (const auto& [key, value] : fields) {
      auto* e = w->add_external_data();
      e->set_key(key);
      e->set_value(value);
    }
    try {
      Engine::load(write_model(m, dir));
      ADD_FAILURE() << "expected: " << message;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect({{"location", "folder"}, {"length", "24"}}, "is not a regular file");
  expect({{"location", "."}}, "is not a regular file");
  expect({{"location", "fifo"}}, "is not a regular file");
  expect({{"location", "weights.bin"}, {"offset", "x1"}}, "offset 'x1' is not a non-negative integer");
  expect({{"location", "weights.bin"}, {"length", "-5"}}, "length '-5' is not a non-negative integer");
  expect({{"location", "weights.bin"}, {"offset", "1"}, {"length", "9223372036854775807"}}, "outside file");
  expect({{"location", "weights.bin"}, {"offset", "99999999999999999999"}}, "is not a non-negative integer");
  expect({{"location", "weights.bin"}, {"offset", "4"}}, "bytes of external data but its shape [2, 3] needs 24");
  fs::remove_all(dir);
}

// Opset 1's forms, which numpy-style kernels would read wrong: broadcast=1 with an axis places the
// second input at that axis (here a per-row bias), and Split's sizes may come as input 1, typed
// as the data (float). fusor added the bias per column and split [2, 4] in halves.
TEST(Importer, OpsetOneBroadcastAxisAndSplitSizesInput) {
  onnx::ModelProto m = test::onnx_model("legacy", 1, 3);
  onnx::GraphProto& g = *m.mutable_graph();
  test::onnx_value(g.add_input(), "a", {2, 4});
  test::onnx_value(g.add_output(), "left", {2, 1});
  test::onnx_value(g.add_output(), "right", {2, 3});
  auto constant = [&](const char* name, std::vector<float> values) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(static_cast<int64_t>(values.size()));
    for (float v : values) t->add_float_data(v);
  };
  constant("bias", {100, 200});
  constant("sizes", {1, 3});
  auto attr = [](onnx::NodeProto* n, const char* name, int64_t v) {
    onnx::AttributeProto* a = n->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
  };
  onnx::NodeProto* add = g.add_node();
  add->set_op_type("Add");
  add->add_input("a"), add->add_input("bias"), add->add_output("y");
  attr(add, "broadcast", 1), attr(add, "axis", 0);
  onnx::NodeProto* split = g.add_node();
  split->set_op_type("Split");
  split->add_input("y"), split->add_input("sizes"), split->add_output("left"), split->add_output("right");
  attr(split, "axis", 1);
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  for (bool reference : {false, true}) {
    SessionOptions options;
    options.reference = reference;
    Session s = Engine::load_bytes(bytes).session({{"a", {2, 4}}}, options);
    Tensor a(DType::Float32, {2, 4});
    for (int i = 0; i < 8; ++i) a.data<float>()[i] = static_cast<float>(i);
    auto out = s.run({{"a", a}});
    ASSERT_EQ(out.at("left").dims(), (Dims{2, 1}));
    ASSERT_EQ(out.at("right").dims(), (Dims{2, 3}));
    EXPECT_EQ(out.at("left").data<float>()[0], 100.f);  // a[0][0] + bias[0]
    EXPECT_EQ(out.at("left").data<float>()[1], 204.f);  // a[1][0] + bias[1]
    EXPECT_EQ(out.at("right").data<float>()[5], 207.f);  // a[1][3] + bias[1]
  }
}

// A shape input of the wrong type names its node (the tensor's own error named nothing).
TEST(Importer, AFloatShapeInputNamesItsNode) {
  auto g = std::make_shared<Graph>();
  Tensor shape(DType::Float32, {2});
  shape.data<float>()[0] = 3, shape.data<float>()[1] = 2;
  Value x{"x", DType::Float32, Shape{Dim{2, ""}, Dim{3, ""}}}, s{"s", DType::Float32, Shape{Dim{2, ""}}}, y{"y"};
  s.constant = shape;
  const int xi = g->add_value(x), si = g->add_value(s), yi = g->add_value(y);
  g->inputs = {xi};
  g->outputs = {yi};
  Node n;
  n.name = "rs", n.op_type = "Reshape", n.op = Op::Reshape, n.opset = 17, n.inputs = {xi, si}, n.outputs = {yi};
  g->values[static_cast<size_t>(yi)].producer = 0;
  g->nodes.push_back(n);
  try {
    build_plan(g, {{"x", {2, 3}}}, {.kernels = KernelChoice::Reference});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'rs' (op Reshape)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("must be int64, not float32"), std::string::npos) << e.what();
  }
}

// The error importing a model gives; a model that imports is a test failure.
Error import_error(const std::string& bytes, const char* dir = ".") {
  try {
    import_onnx_bytes(bytes, dir);
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "the model imported";
  return Error("no error");
}
Error import_error(const onnx::ModelProto& m) {
  std::string bytes;
  m.SerializeToString(&bytes);
  return import_error(bytes);
}

TEST(Importer, RejectsUndefinedInputsAndUnsupportedOps) {
  onnx::ModelProto m;
  m.add_opset_import()->set_version(17);
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type("Relu");
  n->set_name("r");
  n->add_input("ghost");
  n->add_output("y");
  m.mutable_graph()->add_output()->set_name("y");
  const Error undefined = import_error(m);
  EXPECT_NE(std::string(undefined.what()).find("'ghost' is not defined"), std::string::npos) << undefined.what();
  EXPECT_EQ(undefined.kind(), ErrorKind::InvalidModel);
  n->set_op_type("Bogus");
  const Error unsupported = import_error(m);
  EXPECT_NE(std::string(unsupported.what()).find("Bogus"), std::string::npos) << unsupported.what();
  EXPECT_EQ(unsupported.kind(), ErrorKind::UnsupportedOp);
}

// A user fixing a model should learn every missing op at once, with where each first appears,
// including ops inside a subgraph and ops of a domain fusor does not read.
TEST(Importer, ListsEveryUnsupportedOpInOneError) {
  onnx::ModelProto m;
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto add = [](onnx::GraphProto* graph, const char* op, const char* name, const char* in, const char* out) {
    auto* n = graph->add_node();
    n->set_op_type(op);
    n->set_name(name);
    n->add_input(in);
    n->add_output(out);
    return n;
  };
  add(g, "Relu", "ok", "x", "a");
  add(g, "Bogus", "first_bogus", "a", "b");
  add(g, "Bogus", "second_bogus", "b", "c");
  auto* custom = add(g, "Thing", "t", "c", "d");
  custom->set_domain("example.custom");
  auto* wrapper = add(g, "Relu", "wrapper", "d", "y");
  auto* attr = wrapper->add_attribute();  // a graph attribute Relu does not have: still scanned
  attr->set_name("body");
  attr->set_type(onnx::AttributeProto::GRAPH);
  add(attr->mutable_g(), "Widget", "inner", "x", "z");
  g->add_output()->set_name("y");
  const Error e = import_error(m);
  const std::string msg = e.what();
  EXPECT_EQ(e.kind(), ErrorKind::UnsupportedOp);
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("3 unsupported operators"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Bogus (ai.onnx opset 17, first at node 'first_bogus')"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("second_bogus"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Thing (example.custom opset 0, first at node 't')"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Widget (ai.onnx opset 17, first at node 'inner')"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
}

TEST(Importer, ErrorKindsSayWhoseFaultItIs) {
  auto kind_of = [](auto&& load) {
    try {
      load();
    } catch (const Error& e) {
      return e.kind();
    }
    ADD_FAILURE() << "no error";
    return ErrorKind::Runtime;
  };
  EXPECT_EQ(kind_of([] { Engine::load("/nonexistent/model.onnx"); }), ErrorKind::InvalidArgument);
  EXPECT_EQ(kind_of([] { Engine::load_bytes("not a model"); }), ErrorKind::InvalidModel);
  EXPECT_EQ(kind_of([] { Engine::load_bytes(""); }), ErrorKind::InvalidModel);
  onnx::ModelProto m;
  m.add_opset_import()->set_version(99);
  m.mutable_graph()->add_output()->set_name("y");
  std::string bytes;
  m.SerializeToString(&bytes);
  EXPECT_EQ(kind_of([&] { Engine::load_bytes(bytes); }), ErrorKind::UnsupportedOp);  // opset 99
}

// Cast's `to` arrives as an ONNX type code and is held as a DType; types fusor lacks are refused
// at import, naming the node and the type.
TEST(Importer, CastTargetsBecomeDTypes) {
  auto cast_model = [](int64_t to) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    m.add_opset_import()->set_version(13);
    auto* g = m.mutable_graph();
    auto* x = g->add_input();
    x->set_name("x");
    x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
    x->mutable_type()->mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(3);
    auto* n = g->add_node();
    n->set_op_type("Cast");
    n->set_name("the_cast");
    n->add_input("x");
    n->add_output("y");
    auto* a = n->add_attribute();
    a->set_name("to");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(to);
    g->add_output()->set_name("y");
    std::string bytes;
    m.SerializeToString(&bytes);
    return bytes;
  };
  Graph g = import_onnx_bytes(cast_model(onnx::TensorProto::FLOAT), "");
  EXPECT_EQ(g.nodes[0].attr_dtype("to", DType::Undefined), DType::Float32);
  Engine engine = Engine::load_bytes(cast_model(onnx::TensorProto::FLOAT));
  Tensor x(DType::Int64, {3});
  x.data<int64_t>()[2] = 7;
  Tensor y = engine.session({{"x", {3}}}).run({{"x", x}}).at("y");
  ASSERT_EQ(y.dtype(), DType::Float32);
  EXPECT_EQ(y.data<float>()[2], 7.0f);
  const Error e = import_error(cast_model(onnx::TensorProto::COMPLEX64), "");
  const std::string msg = e.what();
  EXPECT_NE(msg.find("the_cast"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unsupported dtype complex64 for attribute 'to'"), std::string::npos) << msg;
  EXPECT_EQ(e.kind(), ErrorKind::UnsupportedOp);
}

TEST(Importer, ShapeSubgraphFoldsToConstantsOnceShapesAreBound) {
  // y = Reshape(x, Concat(Shape(x)[0], [-1])): the shape chain must not become kernels.
  onnx::ModelProto m;
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* x = g->add_input();
  x->set_name("x");
  x->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim()->set_dim_param("batch");
  shape->add_dim()->set_dim_param("seq");
  shape->add_dim()->set_dim_value(4);
  auto node = [&](const char* op, std::vector<std::string> in, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (auto& i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Shape", {"x"}, "s");
  auto* idx = g->add_initializer();
  idx->set_name("zero");
  idx->set_data_type(onnx::TensorProto::INT64);
  idx->add_int64_data(0);
  auto* minus1 = g->add_initializer();
  minus1->set_name("minus1");
  minus1->set_data_type(onnx::TensorProto::INT64);
  minus1->add_dims(1);
  minus1->add_int64_data(-1);
  auto* axes = g->add_initializer();
  axes->set_name("axes");
  axes->set_data_type(onnx::TensorProto::INT64);
  axes->add_dims(1);
  axes->add_int64_data(0);
  auto* gather = node("Gather", {"s", "zero"}, "b");
  gather->add_attribute()->set_name("axis");
  gather->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  gather->mutable_attribute(0)->set_i(0);
  node("Unsqueeze", {"b", "axes"}, "b1");
  auto* concat = node("Concat", {"b1", "minus1"}, "target");
  auto* a = concat->add_attribute();
  a->set_name("axis");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(0);
  node("Reshape", {"x", "target"}, "r");
  node("Relu", {"r"}, "y");
  g->add_output()->set_name("y");
  std::string bytes;
  m.SerializeToString(&bytes);
  auto graph = std::make_shared<const Graph>(import_onnx_bytes(bytes, "."));
  PlanOptions no_views;
  no_views.backend = &cpu::backend();
  no_views.views = false;
  Plan plan = build_plan(graph, {{"x", {3, 5, 4}}}, no_views);
  ASSERT_EQ(plan.steps.size(), 2u);  // Reshape and Relu; Shape/Gather/Unsqueeze/Concat folded
  EXPECT_EQ(graph->nodes[static_cast<size_t>(plan.steps[0].node)].op, Op::Reshape);
  EXPECT_EQ(plan.types[static_cast<size_t>(graph->find_value("y"))].dims, (Dims{3, 20}));
  // With views, the Reshape is no kernel at all: its output aliases x.
  Plan viewed = build_plan(graph, {{"x", {3, 5, 4}}}, {.backend = &cpu::backend()});
  ASSERT_EQ(viewed.steps.size(), 1u);
  EXPECT_EQ(viewed.alias_of[static_cast<size_t>(graph->find_value("r"))], graph->find_value("x"));
}

}  // namespace
}  // namespace fusor
