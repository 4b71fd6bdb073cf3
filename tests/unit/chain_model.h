// A three-node ONNX model built in memory, for tests of the public Engine and the server:
// x float [batch, 4] -> y = relu(x * 2 + 1) (nodes Mul_scaled, Add_shifted, Relu_y), which
// fuse_elemwise turns into one fused item. Returns the serialized ModelProto.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <utility>

namespace fusor {

inline std::string chain_model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  auto* g = m.mutable_graph();
  g->set_name("chain");
  for (auto [vi, name] : {std::pair{g->add_input(), "x"}, std::pair{g->add_output(), "y"}}) {
    vi->set_name(name);
    auto* t = vi->mutable_type()->mutable_tensor_type();
    t->set_elem_type(onnx::TensorProto::FLOAT);
    t->mutable_shape()->add_dim()->set_dim_param("batch");
    t->mutable_shape()->add_dim()->set_dim_value(4);
  }
  for (auto [name, value] : {std::pair{"two", 2.0f}, std::pair{"one", 1.0f}}) {
    auto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_float_data(value);
  }
  auto node = [&](const char* op, std::initializer_list<const char*> in, const char* out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    n->set_name(std::string(op) + "_" + out);
    for (const char* i : in) n->add_input(i);
    n->add_output(out);
  };
  node("Mul", {"x", "two"}, "scaled");
  node("Add", {"scaled", "one"}, "shifted");
  node("Relu", {"shifted"}, "y");
  std::string bytes;
  EXPECT_TRUE(m.SerializeToString(&bytes));
  return bytes;
}

}  // namespace fusor
