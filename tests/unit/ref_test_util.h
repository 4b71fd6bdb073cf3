// Helpers for the hand-checked reference-kernel tests: build a node, build tensors, and run
// an op's shape function plus reference kernel the way the planner does.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/ref/reference.h"

namespace fusor::test {

inline Node make_node(const char* op_type, int opset, std::map<std::string, Attribute> attrs = {},
                      int n_outputs = 1) {
  Node n;
  n.name = std::string("test_") + op_type;
  n.op_type = op_type;
  n.op = *op_from_name(op_type);
  n.opset = opset;
  n.attrs = std::move(attrs);
  for (int i = 0; i < n_outputs; ++i) n.outputs.push_back(i);
  return n;
}

template <class T>
Tensor tensor_of(Dims dims, std::vector<T> values) {
  Tensor t(dtype_of<T>(), std::move(dims));
  EXPECT_EQ(static_cast<size_t>(t.numel()), values.size());
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) t.data<T>()[i] = values[i];
  return t;
}

template <class T>
std::vector<T> values(const Tensor& t) {
  const T* p = t.data<T>();
  return std::vector<T>(p, p + t.numel());
}

// Runs shape fn + ref kernel with every defined input treated as a plan-time constant.
inline std::vector<Tensor> run_reference(const Node& n, std::vector<Tensor> inputs) {
  std::vector<TensorType> types;
  std::vector<const Tensor*> consts;
  for (const Tensor& t : inputs) {
    types.push_back(t.defined() ? TensorType{t.dtype(), t.dims()} : TensorType{});
    consts.push_back(t.defined() ? &t : nullptr);
  }
  InferContext ctx{n, types, consts, ref::evaluate};
  std::vector<TensorType> out_types = op_info(n.op).infer(ctx);
  std::vector<Tensor> outs;
  for (const auto& t : out_types) outs.emplace_back(t.dtype, t.dims);
  ref::evaluate(n, inputs, outs);
  return outs;
}

}  // namespace fusor::test
