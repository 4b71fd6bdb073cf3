// Helpers for the hand-checked reference-kernel tests: build a node, build tensors, and run
// an op's shape function plus reference kernel the way the planner does.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "fusor/error.h"
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

// Short names for the tests: `run` a node as the planner would, and tensors whose literals can
// stay untyped braces (make: float, make<T>: any element type; ints/floats: 1-D).
inline std::vector<Tensor> run(const Node& n, std::vector<Tensor> inputs) { return run_reference(n, std::move(inputs)); }
template <class T>
Tensor make(Dims dims, std::vector<T> v) { return tensor_of<T>(std::move(dims), std::move(v)); }
inline Tensor make(Dims dims, std::vector<float> v) { return tensor_of<float>(std::move(dims), std::move(v)); }
inline Tensor make_i64(Dims dims, std::vector<int64_t> v) { return tensor_of<int64_t>(std::move(dims), std::move(v)); }
inline Tensor make_i32(Dims dims, std::vector<int32_t> v) { return tensor_of<int32_t>(std::move(dims), std::move(v)); }
inline Tensor make_bool(Dims dims, std::vector<bool> v) { return tensor_of<bool>(std::move(dims), std::move(v)); }
inline Tensor ints(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());  // before the move below
  return make_i64({n}, std::move(v));
}
inline Tensor floats(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return make({n}, std::move(v));
}

// A unary op of the elementwise table with its spec's formula in double, for the
// parameterized formula tests (PrintTo names the case by its op).
struct UnaryFormula {
  const char* op;
  int opset;
  std::map<std::string, Attribute> attrs;
  double (*spec)(double x);
};
inline void PrintTo(const UnaryFormula& f, std::ostream* os) { *os << f.op; }

// The storage dtypes of issue 14 (half-width floats and the wider integer kinds), and the raw
// 16-bit patterns of a float16, bfloat16 or uint16 tensor.
constexpr DType kNewTypes[] = {DType::Float16, DType::BFloat16, DType::Int16,
                               DType::UInt16,  DType::UInt32,   DType::UInt64};
inline uint16_t* bits16(const Tensor& t) { return static_cast<uint16_t*>(t.raw()); }

// 0, 1, ..., n-1 as floats.
inline std::vector<float> iota_f(int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i);
  return v;
}

// A node of `op` named as make_node names it.
inline Node node_of(Op op, int opset, std::map<std::string, Attribute> attrs = {}, int n_outputs = 1) {
  return make_node(op_info(op).name, opset, std::move(attrs), n_outputs);
}

// A float tensor's shape and values: NaN and infinities must match exactly, the rest within `tol`.
inline void expect_values(const Tensor& t, Dims dims, std::vector<float> want, float tol = 1e-5f) {
  ASSERT_EQ(t.dims(), dims);
  ASSERT_EQ(static_cast<size_t>(t.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]))
      EXPECT_TRUE(std::isnan(t.data<float>()[i])) << "at " << i;
    else if (std::isinf(want[i]))
      EXPECT_EQ(t.data<float>()[i], want[i]) << "at " << i;
    else
      EXPECT_NEAR(t.data<float>()[i], want[i], tol) << "at " << i;
  }
}

// The message of the fusor::Error that running `n` throws, checked to be one line naming the node.
inline std::string error_of(const Node& n, std::vector<Tensor> inputs) {
  try {
    run(n, std::move(inputs));
  } catch (const Error& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(n.describe()), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    return what;
  }
  ADD_FAILURE() << n.op_type << " did not throw";
  return "";
}

inline bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Running `n` must throw a one-line fusor::Error that names the node and says `what`.
inline void expect_error(const Node& n, std::vector<Tensor> inputs, const std::string& what) {
  const std::string msg = error_of(n, std::move(inputs));
  EXPECT_TRUE(contains(msg, what.c_str())) << "expected an error containing '" << what << "', got: " << msg;
}

}  // namespace fusor::test
