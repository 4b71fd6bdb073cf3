// Shape functions of the reduction family: Softmax, LogSoftmax, Hardmax, LayerNormalization
// and the Reduce* ops.
#include <algorithm>

#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

void require_float(const InferContext& ctx, size_t i, const char* what) {
  if (!is_float(ctx.inputs[i].dtype))
    fail(ctx.node, std::string(what) + " must be float32 or float64, got " + dtype_name(ctx.inputs[i].dtype));
}

std::vector<TensorType> softmax_like(const InferContext& ctx) {
  if (ctx.inputs.empty() || !ctx.has_input(0)) fail(ctx.node, "expects 1 input");
  require_float(ctx, 0, "input");
  int64_t rank = static_cast<int64_t>(ctx.inputs[0].dims.size());
  int64_t axis = ctx.node.attr_int("axis", ctx.node.opset >= 13 ? -1 : 1);
  if (rank == 0) fail(ctx.node, "input must have rank >= 1");
  // Before opset 13 the input is coerced to 2D at `axis`, which may equal the rank.
  if (ctx.node.opset < 13 && axis == rank) return same_as_input(ctx);
  normalize_axis(axis, rank, ctx.node);
  return same_as_input(ctx);
}

// The opset from which `axes` moved from an attribute to an optional second input.
int axes_input_opset(Op op) { return op == Op::ReduceSum ? 13 : 18; }

std::vector<TensorType> reduce(const InferContext& ctx) {
  if (ctx.inputs.empty() || !ctx.has_input(0)) fail(ctx.node, "expects 1 input");
  DType t = ctx.inputs[0].dtype;
  // Bool is ordered (false < true), so only the extremes take it (from opset 20).
  bool extreme = ctx.node.op == Op::ReduceMax || ctx.node.op == Op::ReduceMin;
  if (t == DType::Float16 || t == DType::BFloat16 || t == DType::Undefined || (t == DType::Bool && !extreme))
    fail(ctx.node, std::string("unsupported dtype ") + dtype_name(t));
  const Dims& in = ctx.inputs[0].dims;
  int64_t rank = static_cast<int64_t>(in.size());
  bool keepdims = ctx.node.attr_int("keepdims", 1) != 0;
  std::vector<int64_t> axes;
  bool noop_empty = false;
  if (ctx.node.opset >= axes_input_opset(ctx.node.op)) {
    if (ctx.has_input(1)) axes = constant_ints(ctx, 1, "axes");
    noop_empty = ctx.node.attr_int("noop_with_empty_axes", 0) != 0;
  } else {
    axes = ctx.node.attr_ints("axes");
  }
  if (axes.empty() && noop_empty) return same_as_input(ctx);
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty());
  for (int64_t a : axes) {
    int64_t n = a < 0 ? a + rank : a;
    if (n < 0 || n >= rank)
      fail(ctx.node, "axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    reduced[static_cast<size_t>(n)] = true;
  }
  Dims out;
  for (int64_t d = 0; d < rank; ++d) {
    if (!reduced[static_cast<size_t>(d)]) out.push_back(in[static_cast<size_t>(d)]);
    else if (keepdims) out.push_back(1);
  }
  return {{t, out}};
}

}  // namespace

std::vector<TensorType> shape::Softmax(const InferContext& ctx) { return softmax_like(ctx); }
std::vector<TensorType> shape::LogSoftmax(const InferContext& ctx) { return softmax_like(ctx); }
std::vector<TensorType> shape::Hardmax(const InferContext& ctx) { return softmax_like(ctx); }

std::vector<TensorType> shape::LayerNormalization(const InferContext& ctx) {
  if (ctx.inputs.size() < 2 || !ctx.has_input(0) || !ctx.has_input(1))
    fail(ctx.node, "expects inputs X and Scale");
  require_float(ctx, 0, "X");
  const Dims& x = ctx.inputs[0].dims;
  int64_t rank = static_cast<int64_t>(x.size());
  if (rank == 0) fail(ctx.node, "X must have rank >= 1");
  int64_t axis = normalize_axis(ctx.node.attr_int("axis", -1), rank, ctx.node);
  Dims norm(x.begin() + axis, x.end());
  auto check_param = [&](size_t i, const char* what) {
    if (!ctx.has_input(i)) return;
    if (ctx.inputs[i].dtype != ctx.inputs[0].dtype)
      fail(ctx.node, std::string(what) + " dtype " + dtype_name(ctx.inputs[i].dtype) + " differs from X's " +
                         dtype_name(ctx.inputs[0].dtype));
    const Dims& p = ctx.inputs[i].dims;
    bool ok = p.size() <= norm.size();
    for (size_t k = 0; ok && k < p.size(); ++k) {
      int64_t want = norm[norm.size() - p.size() + k];
      ok = p[k] == want || p[k] == 1;
    }
    if (!ok)
      fail(ctx.node, std::string(what) + " shape " + dims_to_string(p) +
                         " does not broadcast to the normalized shape " + dims_to_string(norm));
  };
  check_param(1, "Scale");
  check_param(2, "B");
  Dims stat(x.begin(), x.begin() + axis);
  stat.resize(x.size(), 1);
  // Mean and InvStdDev have the stash type (ONNX's type U): 1 is float32, 11 is float64.
  int64_t stash = ctx.node.attr_int("stash_type", 1);
  if (stash != 1 && stash != 11) fail(ctx.node, "unsupported stash_type " + std::to_string(stash));
  DType stat_type = stash == 11 ? DType::Float64 : DType::Float32;
  std::vector<TensorType> out = {ctx.inputs[0]};
  size_t n_out = std::clamp<size_t>(ctx.node.outputs.size(), 1, 3);
  for (size_t o = 1; o < n_out; ++o) out.push_back({stat_type, stat});
  return out;
}

std::vector<TensorType> shape::ReduceMean(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceSum(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceMax(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceMin(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceProd(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceL1(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceL2(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceLogSum(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceLogSumExp(const InferContext& ctx) { return reduce(ctx); }
std::vector<TensorType> shape::ReduceSumSquare(const InferContext& ctx) { return reduce(ctx); }

}  // namespace fusor
