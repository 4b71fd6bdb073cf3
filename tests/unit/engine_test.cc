// The public Engine and Session: a model loaded from bytes, the step observer, the fusion items
// a session reports, and the kinds of the errors callers make.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>

#include "fusor/config.h"
#include "fusor/engine.h"
#include "engine/internals.h"
#include "chain_model.h"
#include "onnx_proto_builder.h"

namespace fusor {
namespace {

Tensor input(int64_t rows) {
  Tensor x(DType::Float32, {rows, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) - 3.0f;
  return x;
}

struct Seen {
  size_t index;
  std::string node, op, kernel;
  std::vector<Tensor> inputs, outputs;
};

std::vector<Seen> observe_one_run(Session& session, const Tensor& x) {
  std::vector<Seen> seen;
  session.set_observer([&](const StepEvent& e) {
    Seen s{e.index, std::string(e.node), std::string(e.op), std::string(e.kernel), {}, {}};
    for (const Tensor& t : e.inputs) s.inputs.push_back(t.clone());
    for (const Tensor& t : e.outputs) s.outputs.push_back(t.clone());
    EXPECT_GE(e.seconds, 0.0);
    seen.push_back(std::move(s));
  });
  session.run({{"x", x}});
  session.set_observer(nullptr);
  return seen;
}

TEST(Engine, ObserverSeesEveryStepWithItsTensors) {
  Engine engine = Engine::load_bytes(chain_model());
  SessionOptions unfused;
  unfused.fusion.reset();
  Session session = engine.session({{"x", {2, 4}}}, unfused);
  const Tensor x = input(2);
  std::vector<Seen> seen = observe_one_run(session, x);
  ASSERT_EQ(seen.size(), 3u);
  ASSERT_EQ(seen.size(), session.kernels_per_inference());
  const char* ops[] = {"Mul", "Add", "Relu"};
  for (size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].index, i);
    EXPECT_EQ(seen[i].op, ops[i]);
    EXPECT_FALSE(seen[i].kernel.empty());
  }
  EXPECT_EQ(seen[0].node, "Mul_scaled");
  ASSERT_EQ(seen[0].inputs.size(), 2u);
  EXPECT_EQ(seen[0].inputs[0].dims(), x.dims());
  EXPECT_EQ(seen[0].inputs[1].data<float>()[0], 2.0f);  // the weight "two"
  for (int64_t i = 0; i < x.numel(); ++i) {
    const float v = x.data<float>()[i];
    EXPECT_EQ(seen[0].outputs[0].data<float>()[i], v * 2) << i;
    EXPECT_EQ(seen[1].outputs[0].data<float>()[i], v * 2 + 1) << i;
    EXPECT_EQ(seen[2].outputs[0].data<float>()[i], std::max(0.0f, v * 2 + 1)) << i;
  }
  // Removed, it sees nothing more; the outputs are the same observed or not.
  Tensor y = session.run({{"x", x}}).at("y");
  EXPECT_EQ(std::memcmp(y.raw(), seen[2].outputs[0].raw(), y.nbytes()), 0);
}

// A server context takes sessions built alone into its arena: the session keeps its executor
// (the plan's memory is not planned again) with the hook set on it before, and runs the same.
TEST(Engine, ASessionKeepsItsExecutorWhenItMovesToASharedArena) {
  Engine engine = Engine::load_bytes(chain_model());
  Session session = engine.session({{"x", {2, 4}}});
  const Tensor x = input(2);
  const Tensor alone = session.run({{"x", x}}).at("y");
  size_t steps_seen = 0;
  executor_of(session).set_step_hook([&](size_t, const Step&, double) { ++steps_seen; });
  const Executor* before = &executor_of(session);
  auto arena = std::make_shared<SharedArena>();
  share_arena(session, arena);
  EXPECT_EQ(&executor_of(session), before);
  EXPECT_GE(arena->size(), executor_of(session).memory().arena_bytes);
  const Tensor shared = session.run({{"x", x}}).at("y");
  EXPECT_EQ(steps_seen, session.kernels_per_inference());
  EXPECT_EQ(std::memcmp(alone.raw(), shared.raw(), alone.nbytes()), 0);
}

TEST(Engine, FusedStepCarriesTheFusionItemsName) {
  Engine engine = Engine::load_bytes(chain_model());
  Session fused = engine.session({{"x", {8, 4}}});
  std::vector<FusionItemInfo> items = fused.fusion_items();
  ASSERT_EQ(items.size(), 1u);
  EXPECT_FALSE(items[0].name.empty());
  EXPECT_FALSE(items[0].pass.empty());
  std::vector<Seen> seen = observe_one_run(fused, input(8));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].node, items[0].name);
  EXPECT_EQ(seen[0].op, items[0].kind);

  SessionOptions unfused;
  unfused.fusion.reset();
  EXPECT_TRUE(engine.session({{"x", {8, 4}}}, unfused).fusion_items().empty());
}

ErrorKind kind_of(const std::function<void()>& f, const std::string& fragment = "") {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    return e.kind();
  }
  ADD_FAILURE() << "no error";
  return ErrorKind::Runtime;
}

// Kernels on an empty tensor (a 0-sized dim beside others): the broadcast binary (and the fused
// elementwise chain and the transpose, guarded the same way) divided an index by the zero dim,
// undefined behaviour that UBSan reports (the release build happened to skip it).
TEST(Engine, EmptyTensorsRunThroughBroadcastChainsAndTransposes) {
  onnx::ModelProto m = test::onnx_model("empty", 17);
  onnx::GraphProto& g = *m.mutable_graph();
  test::onnx_value(g.add_input(), "a", {3, 0, 2});
  test::onnx_value(g.add_input(), "b", {1, 2});
  test::onnx_value(g.add_output(), "y", {3, 0, 2});
  test::onnx_value(g.add_output(), "t", {0, 3, 2});
  auto node = [&](const char* op, std::vector<const char*> in, const char* out) {
    onnx::NodeProto* n = g.add_node();
    n->set_op_type(op);
    n->set_name(out);
    for (const char* i : in) n->add_input(i);
    n->add_output(out);
    return n;
  };
  node("Add", {"a", "b"}, "s");
  node("Relu", {"s"}, "r");
  node("Mul", {"r", "b"}, "y");
  onnx::NodeProto* tr = node("Transpose", {"s"}, "t");
  onnx::AttributeProto* perm = tr->add_attribute();
  perm->set_name("perm");
  perm->set_type(onnx::AttributeProto::INTS);
  for (int64_t p : {1, 0, 2}) perm->add_ints(p);
  std::string bytes;
  ASSERT_TRUE(m.SerializeToString(&bytes));
  for (bool fused : {true, false}) {
    SessionOptions options;
    if (!fused) options.fusion.reset();
    Session s = Engine::load_bytes(bytes).session({{"a", {3, 0, 2}}, {"b", {1, 2}}}, options);
    Tensor b(DType::Float32, {1, 2});
    b.data<float>()[0] = 1, b.data<float>()[1] = 2;
    std::vector<std::string> kernels;
    s.set_observer([&](const StepEvent& e) { kernels.emplace_back(e.kernel); });
    auto out = s.run({{"a", Tensor(DType::Float32, {3, 0, 2})}, {"b", b}});
    EXPECT_TRUE(std::any_of(kernels.begin(), kernels.end(), [](const std::string& k) { return k.starts_with("add_bcast"); }))
        << "the broadcast Add runs on the CPU kernel";
    EXPECT_EQ(out.at("y").dims(), (Dims{3, 0, 2}));
    EXPECT_EQ(out.at("t").dims(), (Dims{0, 3, 2}));
  }
}

TEST(Engine, CallersMistakesAreInvalidArguments) {
  Engine engine = Engine::load_bytes(chain_model());
  const auto invalid = ErrorKind::InvalidArgument;
  EXPECT_EQ(kind_of([&] { engine.bind_dims({{"nosuch", {1, 4}}}, 1, 1); }, "'nosuch', which is not a model input"),
            invalid);
  EXPECT_EQ(kind_of([&] { engine.session({{"x", {2, 5}}}); }, "[2, 5]"), invalid);
  EXPECT_EQ(kind_of([&] { engine.session({{"x", {2, 4, 1}}}); }, "rank"), invalid);
  Session session = engine.session({{"x", {2, 4}}});
  EXPECT_EQ(kind_of([&] { session.run({}); }, "missing input 'x'"), invalid);
  EXPECT_EQ(kind_of([&] { session.run({{"x", input(3)}}); }, "must be float32 [2, 4]"), invalid);
  EXPECT_EQ(kind_of([&] { session.run({{"x", input(2)}, {"z", input(2)}}); }, "no input named 'z'"), invalid);
  EXPECT_EQ(kind_of([] { parse_config("fusion: {fuse_elemwise: maybe}", "cfg"); }, "cfg:"), invalid);
  EXPECT_STREQ(error_kind_name(invalid), "invalid_argument");
  EXPECT_EQ(Error("unclassified").kind(), ErrorKind::Runtime);
}

TEST(Engine, BindDimsMessagesNameNoCommandLineFlag) {
  onnx::ModelProto m;
  m.ParseFromString(chain_model());
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  std::string bytes;
  m.SerializeToString(&bytes);
  Engine engine = Engine::load_bytes(bytes);
  try {
    engine.bind_dims({}, 1, 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "input 'x' has no declared shape, and no dims were given for it");
  }
  EXPECT_EQ(engine.bind_dims({{"x", {3, 4}}}, 1, 1).at("x"), (Dims{3, 4}));
}

// A decoder export's inputs, as Optimum names their dims: the mask spans the past and the new
// tokens, so its "total_sequence_length" binds to twice seq when the past binds to seq; a model
// without a past keeps every symbolic length at seq.
std::string model_with_dims(const std::vector<std::pair<std::string, std::vector<std::string>>>& inputs) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("dims");
  auto declare = [](onnx::ValueInfoProto* v, const std::string& name, const std::vector<std::string>& dims) {
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::INT64);
    for (const std::string& d : dims) {  // a number, or a symbol
      if (std::isdigit(static_cast<unsigned char>(d[0]))) t->mutable_shape()->add_dim()->set_dim_value(std::stoll(d));
      else t->mutable_shape()->add_dim()->set_dim_param(d);
    }
  };
  for (const auto& [name, dims] : inputs) {
    declare(g->add_input(), name, dims);
    declare(g->add_output(), name + "_out", dims);
    onnx::NodeProto* n = g->add_node();
    n->set_op_type("Identity");
    n->add_input(name);
    n->add_output(name + "_out");
  }
  std::string bytes;
  m.SerializeToString(&bytes);
  return bytes;
}

TEST(Engine, BindDimsGivesADecodersMaskThePastAndTheTokens) {
  Engine decoder = Engine::load_bytes(model_with_dims({{"input_ids", {"batch_size", "sequence_length"}},
                                                       {"attention_mask", {"batch_size", "total_sequence_length"}},
                                                       {"past_key_values.0.key", {"batch_size", "2", "past_sequence_length", "4"}}}));
  auto dims = decoder.bind_dims({}, 1, 16);
  EXPECT_EQ(dims.at("input_ids"), (Dims{1, 16}));
  EXPECT_EQ(dims.at("attention_mask"), (Dims{1, 32}));
  EXPECT_EQ(dims.at("past_key_values.0.key"), (Dims{1, 2, 16, 4}));
  // A past given outright: the mask follows it (a decode step of one token after 127).
  auto step = decoder.bind_dims({{"past_key_values.0.key", {1, 2, 127, 4}}, {"input_ids", {1, 1}}}, 1, 16);
  EXPECT_EQ(step.at("attention_mask"), (Dims{1, 128}));
  Engine no_past = Engine::load_bytes(model_with_dims({{"input_ids", {"batch_size", "sequence_length"}},
                                                       {"attention_mask", {"batch_size", "total_sequence_length"}}}));
  EXPECT_EQ(no_past.bind_dims({}, 1, 16).at("attention_mask"), (Dims{1, 16}));
}

// torch's dynamo exporter names the dims as the export's torch.export.Dim objects were named:
// the mask's own dim still spans the past and the tokens.
TEST(Engine, BindDimsFindsADecodersMaskByItsInputsNotItsDimNames) {
  Engine decoder = Engine::load_bytes(model_with_dims({{"input_ids", {"b", "s"}},
                                                       {"attention_mask", {"b", "t"}},
                                                       {"position_ids", {"b", "s"}},
                                                       {"past_key_values.0.key", {"b", "2", "p", "4"}}}));
  auto dims = decoder.bind_dims({}, 1, 16);
  EXPECT_EQ(dims.at("attention_mask"), (Dims{1, 32}));
  EXPECT_EQ(dims.at("position_ids"), (Dims{1, 16}));
  auto step = decoder.bind_dims({{"past_key_values.0.key", {1, 2, 7, 4}}, {"input_ids", {1, 3}}}, 1, 16);
  EXPECT_EQ(step.at("attention_mask"), (Dims{1, 10}));
  // A mask given outright keeps its length.
  EXPECT_EQ(decoder.bind_dims({{"attention_mask", {1, 5}}}, 1, 16).at("attention_mask"), (Dims{1, 5}));
}

}  // namespace
}  // namespace fusor
