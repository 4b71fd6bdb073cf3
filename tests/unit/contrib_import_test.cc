// ONNX Runtime contrib ops at import (onnx/contrib_ops.h): what they expand into, and the one-line
// errors for what the expansions do not support. Numerics against ONNX Runtime are in
// tests/e2e/test_contrib_ops.py and test_contrib_quant_ops.py.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <functional>
#include <initializer_list>

#include "onnx/importer.h"

namespace fusor {
namespace {

constexpr const char* kMs = "com.microsoft";

// A model with graph inputs and initializers and one node of `op_type`, whose attributes
// `setup` adds.
struct OneNodeModel {
  onnx::ModelProto model;
  onnx::NodeProto* node;

  OneNodeModel(const char* op_type, std::initializer_list<const char*> inputs, std::initializer_list<const char*> outputs,
               const char* domain = kMs, int64_t opset = 17) {
    model.set_ir_version(8);
    auto* o = model.add_opset_import();
    o->set_version(opset);
    auto* ms = model.add_opset_import();
    ms->set_domain(kMs);
    ms->set_version(1);
    model.mutable_graph()->set_name("g");
    node = model.mutable_graph()->add_node();
    node->set_op_type(op_type);
    node->set_domain(domain);
    node->set_name(std::string("the_") + op_type);
    for (const char* i : inputs) node->add_input(i);
    for (const char* out : outputs) {
      node->add_output(out);
      if (*out) {
        auto* vi = model.mutable_graph()->add_output();
        vi->set_name(out);
        vi->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
      }
    }
  }

  // A graph input; `dims` empty with `ranked` false leaves the shape unknown.
  OneNodeModel& input(const char* name, std::vector<int64_t> dims, bool ranked = true,
                      int type = onnx::TensorProto::FLOAT) {
    auto* vi = model.mutable_graph()->add_input();
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(type);
    if (ranked) {
      t->mutable_shape();
      for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    }
    return *this;
  }

  // A float32 initializer of 0.5s.
  OneNodeModel& weight(const char* name, std::vector<int64_t> dims) {
    auto* w = initializer(name, dims, onnx::TensorProto::FLOAT);
    for (int64_t i = 0; i < numel(dims); ++i) w->add_float_data(0.5f);
    return *this;
  }

  // A uint8 initializer filled with `value`.
  OneNodeModel& bytes(const char* name, std::vector<int64_t> dims, uint8_t value) {
    initializer(name, dims, onnx::TensorProto::UINT8)
        ->set_raw_data(std::string(static_cast<size_t>(numel(dims)), static_cast<char>(value)));
    return *this;
  }

  onnx::TensorProto* initializer(const char* name, const std::vector<int64_t>& dims, int type) {
    auto* w = model.mutable_graph()->add_initializer();
    w->set_name(name);
    w->set_data_type(type);
    for (int64_t d : dims) w->add_dims(d);
    return w;
  }

  static int64_t numel(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }

  OneNodeModel& attr(const char* name, int64_t v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(v);
    return *this;
  }

  OneNodeModel& attr(const char* name, std::vector<int64_t> v) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx::AttributeProto::INTS);
    for (int64_t x : v) a->add_ints(x);
    return *this;
  }

  Graph import() const { return import_onnx_bytes(model.SerializeAsString(), "."); }
};

// The import fails with one line of this kind that contains every one of `parts`.
void expect_error(const OneNodeModel& m, ErrorKind kind, std::initializer_list<const char*> parts) {
  try {
    m.import();
    ADD_FAILURE() << "imported without an error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), kind) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    for (const char* p : parts) EXPECT_NE(what.find(p), std::string::npos) << "'" << p << "' not in: " << what;
  }
}

int count_ops(const Graph& g, Op op) {
  return static_cast<int>(std::count_if(g.nodes.begin(), g.nodes.end(), [&](const Node& n) { return n.op == op; }));
}

OneNodeModel attention_model() {
  OneNodeModel m("Attention", {"x", "w", "b"}, {"y"});
  m.input("x", {2, 5, 16}).weight("w", {16, 48}).weight("b", {48}).attr("num_heads", 4);
  return m;
}

TEST(ContribImport, SkipLayerNormalizationBecomesTheDecomposedLayerNormWithItsOutputsNamed) {
  OneNodeModel m("SkipLayerNormalization", {"x", "skip", "gamma", "beta", "bias"}, {"y", "", "", "sum"});
  m.input("x", {2, 3, 8}).input("skip", {2, 3, 8}).weight("gamma", {8}).weight("beta", {8}).weight("bias", {8});
  Graph g = m.import();
  for (const Node& n : g.nodes) EXPECT_TRUE(n.domain.empty()) << n.name;
  EXPECT_EQ(count_ops(g, Op::ReduceMean), 2);
  EXPECT_EQ(count_ops(g, Op::Sqrt), 1);
  ASSERT_EQ(g.outputs.size(), 2u);
  EXPECT_GE(g.values[static_cast<size_t>(g.outputs[0])].producer, 0);
  EXPECT_EQ(g.nodes[static_cast<size_t>(g.values[static_cast<size_t>(g.outputs[1])].producer)].op, Op::Add);
}

TEST(ContribImport, ExpandedNodesReadTheOpsetTheExpansionsAreWrittenFor) {
  OneNodeModel m("FastGelu", {"x"}, {"y"}, kMs, 11);
  m.input("x", {4});
  Graph g = m.import();
  ASSERT_FALSE(g.nodes.empty());
  for (const Node& n : g.nodes) EXPECT_EQ(n.opset, 13) << n.name;
  EXPECT_EQ(count_ops(g, Op::Tanh), 1);
}

TEST(ContribImport, SimplifiedLayerNormalizationIsAlsoReadInTheDefaultDomain) {
  OneNodeModel m("SimplifiedLayerNormalization", {"x", "scale"}, {"y"}, "");
  m.input("x", {2, 8}).weight("scale", {8});
  EXPECT_EQ(count_ops(m.import(), Op::ReduceMean), 1);
}

TEST(ContribImport, AttentionSharesOneMaskBiasAcrossLayers) {
  OneNodeModel m("Attention", {"x", "w", "b", "mask"}, {"y"});
  m.input("x", {2, 5, 16}).input("mask", {2, 5}, true, onnx::TensorProto::INT32);
  m.weight("w", {16, 48}).weight("b", {48}).attr("num_heads", 4);
  auto* second = m.model.mutable_graph()->add_node();
  *second = *m.node;
  second->set_name("second");
  second->set_input(0, "y");
  second->set_output(0, "y2");
  m.model.mutable_graph()->mutable_output(0)->set_name("y2");
  Graph g = m.import();
  EXPECT_EQ(count_ops(g, Op::Softmax), 2);
  EXPECT_EQ(count_ops(g, Op::Greater), 1);  // the mask's "valid" test, once
}

TEST(ContribImport, UnknownContribOpsAreUnsupported) {
  OneNodeModel m("NoSuchThing", {"x"}, {"y"});
  m.input("x", {4});
  expect_error(m, ErrorKind::UnsupportedOp, {"NoSuchThing (com.microsoft opset 1", "the_NoSuchThing"});
}

TEST(ContribImport, AttentionRejectsWhatItDoesNotSupportNamingTheNode) {
  expect_error(attention_model().attr("do_rotary", 1), ErrorKind::UnsupportedOp, {"the_Attention", "do_rotary"});
  {
    auto m = attention_model();
    m.node->add_input("");
    m.node->add_input("past");
    m.input("past", {2, 2, 4, 0, 4});
    expect_error(m, ErrorKind::UnsupportedOp, {"the_Attention", "past"});
  }
  {
    auto m = attention_model();
    m.node->add_output("present");
    expect_error(m, ErrorKind::UnsupportedOp, {"the_Attention", "present"});
  }
  {
    OneNodeModel m("Attention", {"x", "w"}, {"y"});
    m.input("x", {2, 5, 16}).weight("w", {16, 40}).attr("num_heads", 4);
    expect_error(m, ErrorKind::InvalidModel, {"the_Attention", "not divisible by 3"});
  }
  {
    OneNodeModel m("Attention", {"x", "w"}, {"y"});
    m.input("x", {2, 5, 16}).input("w", {}, false).attr("num_heads", 4);
    expect_error(m, ErrorKind::UnsupportedOp, {"the_Attention", "qkv_hidden_sizes"});
  }
  expect_error(attention_model().attr("qkv_hidden_sizes", std::vector<int64_t>{16, 16, 15}), ErrorKind::InvalidModel,
               {"the_Attention", "multiple of num_heads"});
  {
    OneNodeModel m("Attention", {"x", "w", "b"}, {"y"});
    m.input("x", {2, 5, 16}).weight("w", {16, 48}).weight("b", {48}).attr("num_heads", 0);
    expect_error(m, ErrorKind::InvalidModel, {"the_Attention", "num_heads"});
  }
  {
    OneNodeModel m("Attention", {"x", "w", "b", "mask"}, {"y"});
    m.input("x", {2, 5, 16}).weight("w", {16, 48}).weight("b", {48}).attr("num_heads", 4);
    m.input("mask", {2, 1, 5, 5}, true, onnx::TensorProto::INT32);
    expect_error(m, ErrorKind::UnsupportedOp, {"the_Attention", "rank 4"});
  }
}

// The QDQ form the int8 fusion matches: DequantizeLinear -> float op -> QuantizeLinear.
TEST(ContribImport, QLinearAddBecomesDequantizeAddQuantize) {
  OneNodeModel m("QLinearAdd", {"a", "as", "az", "b", "bs", "bz", "cs", "cz"}, {"c"});
  m.input("a", {2, 3}, true, onnx::TensorProto::UINT8).input("b", {3}, true, onnx::TensorProto::UINT8);
  m.weight("as", {}).bytes("az", {}, 3).weight("bs", {}).bytes("bz", {}, 7).weight("cs", {}).bytes("cz", {}, 9);
  Graph g = m.import();
  ASSERT_EQ(g.nodes.size(), 4u);
  EXPECT_EQ(count_ops(g, Op::DequantizeLinear), 2);
  EXPECT_EQ(g.nodes[2].op, Op::Add);
  EXPECT_EQ(g.nodes[3].op, Op::QuantizeLinear);
  EXPECT_EQ(g.values[static_cast<size_t>(g.nodes[3].outputs[0])].name, "c");
}

// MatMulNBits' weight [N=3, 2 blocks, 8 bytes] (K=32, block 16): every code 0x21 -> 1 then 2.
OneNodeModel nbits_model(int64_t opset) {
  OneNodeModel m("MatMulNBits", {"a", "w", "scales"}, {"y"}, kMs, opset);
  m.input("a", {2, 32}).bytes("w", {3, 2, 8}, 0x21).weight("scales", {6});
  m.attr("K", 32).attr("N", 3).attr("bits", 4).attr("block_size", 16);
  return m;
}

TEST(ContribImport, MatMulNBitsBecomesABlockedDequantizeOfItsUnpackedWeightAtOpset21) {
  Graph g = nbits_model(21).import();
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node& dq = g.nodes[0];
  ASSERT_EQ(dq.op, Op::DequantizeLinear);
  EXPECT_EQ(dq.attr_int("block_size", 0), 16);
  EXPECT_EQ(dq.attr_int("axis", -1), 0);
  const Tensor& codes = *g.values[static_cast<size_t>(dq.inputs[0])].constant;
  EXPECT_EQ(codes.dtype(), DType::UInt4);
  EXPECT_EQ(codes.dims(), (Dims{32, 3}));
  const auto* c = static_cast<const uint8_t*>(codes.raw());
  EXPECT_EQ(c[0], 1);  // row 0 in the low nibble
  EXPECT_EQ(c[3], 2);  // row 1, column 0
  EXPECT_EQ(static_cast<const uint8_t*>(g.values[static_cast<size_t>(dq.inputs[2])].constant->raw())[0], 8);
  EXPECT_EQ(g.nodes[1].op, Op::MatMul);
}

TEST(ContribImport, MatMulNBitsHoldsTheDequantizedFloatWeightBelowOpset21) {
  Graph g = nbits_model(17).import();
  ASSERT_EQ(g.nodes.size(), 1u);
  ASSERT_EQ(g.nodes[0].op, Op::MatMul);
  const Tensor& w = *g.values[static_cast<size_t>(g.nodes[0].inputs[1])].constant;
  EXPECT_EQ(w.dims(), (Dims{32, 3}));
  EXPECT_FLOAT_EQ(w.data<float>()[0], (1 - 8) * 0.5f);
  EXPECT_FLOAT_EQ(w.data<float>()[3], (2 - 8) * 0.5f);
}

TEST(ContribImport, UnnamedContribNodesEachGetTheirOwnValues) {
  OneNodeModel m("MatMulIntegerToFloat", {"a", "b", "as", "bs"}, {"y"});
  m.input("a", {2, 4}, true, onnx::TensorProto::UINT8).bytes("b", {4, 3}, 5).weight("as", {}).weight("bs", {});
  m.node->clear_name();
  auto* second = m.model.mutable_graph()->add_node();
  *second = *m.node;
  second->set_output(0, "y2");
  EXPECT_EQ(count_ops(m.import(), Op::MatMulInteger), 2);
}

TEST(ContribImport, OtherOpsRejectBadAttributesAndInputsNamingTheNode) {
  {
    OneNodeModel m("FusedMatMul", {"a", "b"}, {"y"});
    m.input("a", {2, 3}).input("b", {3, 2}).attr("transBatchA", 1);
    expect_error(m, ErrorKind::UnsupportedOp, {"the_FusedMatMul", "transBatchA"});
  }
  {
    OneNodeModel m("FusedMatMul", {"a", "b"}, {"y"});
    m.input("a", {}, false).input("b", {3, 2}).attr("transA", 1);
    expect_error(m, ErrorKind::UnsupportedOp, {"the_FusedMatMul", "rank of input 0"});
  }
  {
    OneNodeModel m("FusedMatMul", {"a", "b"}, {"y"});
    m.input("a", {3}).input("b", {3, 2}).attr("transA", 1);
    expect_error(m, ErrorKind::InvalidModel, {"the_FusedMatMul", "rank 1"});
  }
  {
    OneNodeModel m("BiasGelu", {"x"}, {"y"});
    m.input("x", {3});
    expect_error(m, ErrorKind::InvalidModel, {"the_BiasGelu", "input 1 is required"});
  }
  {
    OneNodeModel m("SkipSimplifiedLayerNormalization", {"x", "skip", "gamma"}, {"y", "mean"});
    m.input("x", {2, 8}).input("skip", {2, 8}).weight("gamma", {8});
    expect_error(m, ErrorKind::UnsupportedOp, {"the_SkipSimplifiedLayerNormalization", "mean"});
  }
  {
    OneNodeModel m("SimplifiedLayerNormalization", {"x", "scale"}, {"y"}, "");
    m.input("x", {2, 8}).weight("scale", {8}).attr("axis", 2);
    expect_error(m, ErrorKind::InvalidModel, {"the_SimplifiedLayerNormalization", "axis 2 is out of range"});
  }
  {
    OneNodeModel m("EmbedLayerNormalization", {"ids", "seg_ids", "word", "pos", "", "gamma", "beta"}, {"y"});
    m.input("ids", {2, 3}, true, onnx::TensorProto::INT32).input("seg_ids", {2, 3}, true, onnx::TensorProto::INT32);
    m.weight("word", {5, 4}).weight("pos", {5, 4}).weight("gamma", {4}).weight("beta", {4});
    expect_error(m, ErrorKind::InvalidModel, {"the_EmbedLayerNormalization", "segment_embedding"});
  }
  {
    OneNodeModel m("RotaryEmbedding", {"x", "pos", "cos", "sin"}, {"y"});
    m.input("x", {1, 2, 3, 6}).input("pos", {1, 3}, true, onnx::TensorProto::INT64);
    m.weight("cos", {4, 2}).weight("sin", {4, 2}).attr("rotary_embedding_dim", 3).attr("num_heads", 2);
    expect_error(m, ErrorKind::InvalidModel, {"the_RotaryEmbedding", "even"});
  }
  {
    OneNodeModel m("GroupQueryAttention", {"q", "k", "v", "past_key", "", "lens", "total"}, {"y", "pk", "pv"});
    m.input("q", {1, 3, 16}).input("k", {1, 3, 8}).input("v", {1, 3, 8}).input("past_key", {1, 1, 0, 8});
    m.input("lens", {1}, true, onnx::TensorProto::INT32);
    m.input("total", {}, true, onnx::TensorProto::INT32).attr("num_heads", 2).attr("kv_num_heads", 1);
    expect_error(m, ErrorKind::InvalidModel, {"the_GroupQueryAttention", "past_key and past_value come together"});
  }
  {
    OneNodeModel m("GroupQueryAttention", {"q", "k", "v", "", "", "lens", "total"}, {"y", "pk", "pv"});
    m.input("q", {1, 3, 24}).input("k", {1, 3, 16}).input("v", {1, 3, 16});
    m.input("lens", {1}, true, onnx::TensorProto::INT32).input("total", {}, true, onnx::TensorProto::INT32);
    m.attr("num_heads", 3).attr("kv_num_heads", 2);
    expect_error(m, ErrorKind::InvalidModel, {"the_GroupQueryAttention", "multiple of kv_num_heads"});
  }
}

}  // namespace
}  // namespace fusor
