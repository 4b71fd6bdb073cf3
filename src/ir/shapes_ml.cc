// Shape functions of the ml family (ir/op_rows_ml.h): TfIdfVectorizer, and the ai.onnx.ml ops
// Binarizer, ArrayFeatureExtractor and TreeEnsemble.
#include <string>

#include "ir/graph.h"
#include "ir/input_checks.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"
#include "ir/tfidf_params.h"
#include "ir/tree_ensemble_params.h"

namespace fusor {
namespace {

void require_dtype_in(const InferContext& ctx, size_t i, std::initializer_list<DType> allowed, const char* what) {
  const DType t = ctx.inputs[i].dtype;
  for (DType a : allowed)
    if (t == a) return;
  std::string names;
  for (DType a : allowed) names += std::string(names.empty() ? "" : ", ") + dtype_name(a);
  fail(ctx.node, std::string(what) + " has dtype " + dtype_name(t) + ", expected one of " + names);
}

}  // namespace

std::vector<TensorType> shape::TfIdfVectorizer(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  require_dtype_in(ctx, 0, {DType::Int32, DType::Int64}, "X");
  const TfIdfSpec s = tfidf_spec(ctx.node);
  const Dims& x = ctx.inputs[0].dims;
  if (x.size() == 1) return {{DType::Float32, {s.output_size}}};
  if (x.size() == 2) return {{DType::Float32, {x[0], s.output_size}}};
  fail(ctx.node, "X must be [C] or [N, C], got " + dims_to_string(x));
}

std::vector<TensorType> shape::Binarizer(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  require_dtype_in(ctx, 0, {DType::Float32, DType::Float64, DType::Int64, DType::Int32}, "X");
  return same_as_input(ctx, 0);
}

std::vector<TensorType> shape::ArrayFeatureExtractor(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  require_input(ctx, 1, "Y");
  require_dtype_in(ctx, 0, {DType::Float32, DType::Float64, DType::Int64, DType::Int32}, "X");
  require_dtype_in(ctx, 1, {DType::Int64}, "Y");
  const Dims& x = ctx.inputs[0].dims;
  if (x.empty()) fail(ctx.node, "X must have at least one dimension");
  const int64_t picked = numel_of(ctx.inputs[1].dims);
  if (const Tensor* y = ctx.constant(1))  // known now: refuse a bad index when the plan is built
    for (int64_t i : y->to_int64_vector())
      if (i < 0 || i >= x.back())
        fail(ctx.node, "index " + std::to_string(i) + " is out of range [0, " + std::to_string(x.back()) + ")");
  // A 1-D X gives one row, as in ONNX Runtime and ONNX's reference.
  Dims out = x.size() == 1 ? Dims{1} : Dims(x.begin(), x.end() - 1);
  out.push_back(picked);
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::TreeEnsemble(const InferContext& ctx) {
  require_input(ctx, 0, "X");
  require_dtype_in(ctx, 0, {DType::Float32, DType::Float64}, "X");
  const Dims& x = ctx.inputs[0].dims;
  if (x.size() != 2) fail(ctx.node, "X must be [N, F], got " + dims_to_string(x));
  const TreeEnsembleSpec s = tree_ensemble_spec(ctx.node, ctx.inputs[0].dtype);
  if (s.max_feature >= x[1])
    fail(ctx.node, "a tree node reads feature " + std::to_string(s.max_feature) + " but X has " + std::to_string(x[1]));
  int64_t numel = 0;
  if (__builtin_mul_overflow(x[0], s.n_targets, &numel)) fail(ctx.node, "output size overflows");
  return {{ctx.inputs[0].dtype, {x[0], s.n_targets}}};
}

}  // namespace fusor
