// Shape functions of the neural-network family: MatMul, Gemm, Conv, the pools and MaxUnpool.
#include <algorithm>
#include <variant>

#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

bool is_float(DType t) { return t == DType::Float32 || t == DType::Float64; }

void require_inputs(const InferContext& ctx, size_t n, const char* what) {
  for (size_t i = 0; i < n; ++i)
    if (!ctx.has_input(i)) fail(ctx.node, std::string("expects inputs ") + what);
}

void require_float(const InferContext& ctx, size_t i, const char* what) {
  if (!is_float(ctx.inputs[i].dtype))
    fail(ctx.node, std::string(what) + " must be float32 or float64, got " + dtype_name(ctx.inputs[i].dtype));
}

std::vector<int64_t> ints_or(const Node& node, const char* key, size_t n, int64_t fill) {
  auto v = node.attr_ints(key);
  if (v.empty()) return std::vector<int64_t>(n, fill);
  return v;
}

// Output spatial sizes of a sliding window (Conv, MaxPool, AveragePool), per the ONNX spec.
Dims window_output(const InferContext& ctx, const Dims& x, const std::vector<int64_t>& kernel,
                   bool allow_ceil) {
  const Node& node = ctx.node;
  size_t ns = x.size() - 2;
  if (kernel.size() != ns)
    fail(node, "kernel_shape has " + std::to_string(kernel.size()) + " dims, input has " +
                   std::to_string(ns) + " spatial dims");
  auto strides = ints_or(node, "strides", ns, 1);
  auto dilations = ints_or(node, "dilations", ns, 1);
  auto pads = ints_or(node, "pads", 2 * ns, 0);
  if (strides.size() != ns || dilations.size() != ns || pads.size() != 2 * ns)
    fail(node, "strides, dilations or pads do not match " + std::to_string(ns) + " spatial dims");
  std::string auto_pad = node.attr_string("auto_pad", "NOTSET");
  bool ceil_mode = allow_ceil && node.attr_int("ceil_mode", 0) != 0;
  Dims out = {x[0], 0};
  for (size_t d = 0; d < ns; ++d) {
    int64_t in = x[d + 2], s = strides[d], k = kernel[d], dil = dilations[d];
    if (s < 1 || dil < 1 || k < 1) fail(node, "strides, dilations and kernel_shape must be positive");
    int64_t span = (k - 1) * dil + 1;
    int64_t o = 0;
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      o = (in + s - 1) / s;
    } else if (auto_pad == "VALID") {
      o = in >= span ? (in - span) / s + 1 : 0;
    } else if (auto_pad == "NOTSET" || auto_pad.empty()) {
      int64_t pb = pads[d], pe = pads[d + ns];
      int64_t padded = in + pb + pe - span;
      if (padded < 0) fail(node, "kernel window " + std::to_string(span) + " is larger than the padded input " +
                                     std::to_string(in + pb + pe));
      o = (ceil_mode ? (padded + s - 1) / s : padded / s) + 1;
      // A window that would start in the right padding is dropped.
      if (ceil_mode && (o - 1) * s >= in + pb) --o;
    } else {
      fail(node, "unknown auto_pad '" + auto_pad + "'");
    }
    out.push_back(o);
  }
  return out;
}

void require_spatial(const InferContext& ctx, const Dims& x) {
  if (x.size() < 3) fail(ctx.node, "input must have rank >= 3 (N, C, spatial...), got " + dims_to_string(x));
  if (x.size() > 5) fail(ctx.node, "at most 3 spatial dims are supported, got " + dims_to_string(x));
}

enum class PoolKind { Max, Average, Lp };

std::vector<TensorType> pool(const InferContext& ctx, PoolKind kind) {
  require_inputs(ctx, 1, "X");
  const Dims& x = ctx.inputs[0].dims;
  DType t = ctx.inputs[0].dtype;
  const bool is_max = kind == PoolKind::Max;
  if (!is_float(t) && !(is_max && (t == DType::Int8 || t == DType::UInt8)))
    fail(ctx.node, std::string("unsupported dtype ") + dtype_name(t));
  require_spatial(ctx, x);
  auto kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.empty()) fail(ctx.node, "attribute kernel_shape is required");
  if (kind == PoolKind::Average && ctx.node.opset < 19 && ctx.node.has_attr("dilations"))
    fail(ctx.node, "dilations are not part of AveragePool before opset 19");
  if (kind == PoolKind::Lp) {
    // p is an int from opset 11, a float before.
    auto it = ctx.node.attrs.find("p");
    double p = it != ctx.node.attrs.end() && std::holds_alternative<float>(it->second)
                   ? std::get<float>(it->second)
                   : static_cast<double>(ctx.node.attr_int("p", 2));
    if (!(p >= 1)) fail(ctx.node, "p must be at least 1, got " + std::to_string(p));
  }
  Dims out = window_output(ctx, x, kernel, true);
  out[1] = x[1];
  std::vector<TensorType> res = {{t, out}};
  if (is_max && ctx.node.outputs.size() > 1) res.push_back({DType::Int64, out});
  return res;
}

}  // namespace

std::vector<TensorType> shape::MatMul(const InferContext& ctx) {
  require_inputs(ctx, 2, "A and B");
  DType t = ctx.inputs[0].dtype;
  if (ctx.inputs[1].dtype != t)
    fail(ctx.node, std::string("A is ") + dtype_name(t) + " but B is " + dtype_name(ctx.inputs[1].dtype));
  if (!is_float(t) && t != DType::Int32 && t != DType::Int64)
    fail(ctx.node, std::string("unsupported dtype ") + dtype_name(t));
  Dims a = ctx.inputs[0].dims, b = ctx.inputs[1].dims;
  if (a.empty() || b.empty()) fail(ctx.node, "operands must have rank >= 1");
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  int64_t m = a[a.size() - 2], k = a.back(), kb = b[b.size() - 2], n = b.back();
  if (k != kb)
    fail(ctx.node, "inner dimensions differ: " + dims_to_string(ctx.inputs[0].dims) + " @ " +
                       dims_to_string(ctx.inputs[1].dims));
  Dims out = broadcast_dims(Dims(a.begin(), a.end() - 2), Dims(b.begin(), b.end() - 2), ctx.node);
  if (!a_vec) out.push_back(m);
  if (!b_vec) out.push_back(n);
  return {{t, out}};
}

std::vector<TensorType> shape::Gemm(const InferContext& ctx) {
  require_inputs(ctx, 2, "A and B");
  require_float(ctx, 0, "A");
  DType t = ctx.inputs[0].dtype;
  const Dims& a = ctx.inputs[0].dims;
  const Dims& b = ctx.inputs[1].dims;
  if (ctx.inputs[1].dtype != t) fail(ctx.node, "A and B dtypes differ");
  if (a.size() != 2 || b.size() != 2)
    fail(ctx.node, "A and B must be 2-D, got " + dims_to_string(a) + " and " + dims_to_string(b));
  bool ta = ctx.node.attr_int("transA", 0) != 0, tb = ctx.node.attr_int("transB", 0) != 0;
  int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb)
    fail(ctx.node, "inner dimensions differ: A " + dims_to_string(a) + (ta ? "^T" : "") + ", B " +
                       dims_to_string(b) + (tb ? "^T" : ""));
  Dims out = {m, n};
  if (ctx.has_input(2)) {
    const Dims& c = ctx.inputs[2].dims;
    if (ctx.inputs[2].dtype != t) fail(ctx.node, "C dtype differs from A");
    if (c.size() > 2 || broadcast_dims(c, out, ctx.node) != out)
      fail(ctx.node, "C " + dims_to_string(c) + " does not broadcast to " + dims_to_string(out));
  }
  return {{t, out}};
}

std::vector<TensorType> shape::Conv(const InferContext& ctx) {
  require_inputs(ctx, 2, "X and W");
  require_float(ctx, 0, "X");
  DType t = ctx.inputs[0].dtype;
  const Dims& x = ctx.inputs[0].dims;
  const Dims& w = ctx.inputs[1].dims;
  require_spatial(ctx, x);
  if (ctx.inputs[1].dtype != t) fail(ctx.node, "W dtype differs from X");
  if (w.size() != x.size())
    fail(ctx.node, "W " + dims_to_string(w) + " and X " + dims_to_string(x) + " ranks differ");
  int64_t group = ctx.node.attr_int("group", 1);
  if (group < 1 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1])
    fail(ctx.node, "channels do not match: X " + dims_to_string(x) + ", W " + dims_to_string(w) +
                       ", group " + std::to_string(group));
  auto kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.empty()) kernel.assign(w.begin() + 2, w.end());
  if (!std::equal(kernel.begin(), kernel.end(), w.begin() + 2, w.end()))
    fail(ctx.node, "kernel_shape does not match W " + dims_to_string(w));
  if (ctx.has_input(2) && (ctx.inputs[2].dims != Dims{w[0]} || ctx.inputs[2].dtype != t))
    fail(ctx.node, "bias must be a " + std::string(dtype_name(t)) + " vector of " + std::to_string(w[0]) +
                       ", got " + dims_to_string(ctx.inputs[2].dims));
  Dims out = window_output(ctx, x, kernel, false);
  out[1] = w[0];
  return {{t, out}};
}

std::vector<TensorType> shape::MaxPool(const InferContext& ctx) { return pool(ctx, PoolKind::Max); }
std::vector<TensorType> shape::AveragePool(const InferContext& ctx) { return pool(ctx, PoolKind::Average); }
std::vector<TensorType> shape::LpPool(const InferContext& ctx) { return pool(ctx, PoolKind::Lp); }

std::vector<TensorType> shape::GlobalAveragePool(const InferContext& ctx) {
  require_inputs(ctx, 1, "X");
  require_float(ctx, 0, "X");
  Dims out = ctx.inputs[0].dims;
  if (out.size() < 2) fail(ctx.node, "input must have rank >= 2, got " + dims_to_string(out));
  std::fill(out.begin() + 2, out.end(), 1);
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::GlobalMaxPool(const InferContext& ctx) { return shape::GlobalAveragePool(ctx); }

// The unpooled shape is (in - 1) * stride - pads + kernel per spatial dim; output_shape may
// only enlarge it (ONNX's reference keeps the unpooled block at the start).
std::vector<TensorType> shape::MaxUnpool(const InferContext& ctx) {
  require_inputs(ctx, 2, "X and I");
  require_float(ctx, 0, "X");
  const Dims& x = ctx.inputs[0].dims;
  require_spatial(ctx, x);
  if (ctx.inputs[1].dtype != DType::Int64 || ctx.inputs[1].dims != x)
    fail(ctx.node, "I must be int64 of X's shape " + dims_to_string(x) + ", got " +
                       dtype_name(ctx.inputs[1].dtype) + " " + dims_to_string(ctx.inputs[1].dims));
  const size_t ns = x.size() - 2;
  auto kernel = ctx.node.attr_ints("kernel_shape");
  if (kernel.size() != ns) fail(ctx.node, "kernel_shape must have " + std::to_string(ns) + " values");
  auto strides = ints_or(ctx.node, "strides", ns, 1);
  auto pads = ints_or(ctx.node, "pads", 2 * ns, 0);
  if (strides.size() != ns || pads.size() != 2 * ns)
    fail(ctx.node, "strides or pads do not match " + std::to_string(ns) + " spatial dims");
  Dims out = {x[0], x[1]};
  for (size_t d = 0; d < ns; ++d) {
    if (kernel[d] < 1 || strides[d] < 1) fail(ctx.node, "kernel_shape and strides must be positive");
    out.push_back((x[d + 2] - 1) * strides[d] - pads[d] - pads[d + ns] + kernel[d]);
    if (out.back() < 0) fail(ctx.node, "pads are larger than the unpooled size in dim " + std::to_string(d));
  }
  if (ctx.has_input(2)) {
    auto given = constant_ints(ctx, 2, "output_shape");
    bool fits = given.size() == out.size() && given[0] == out[0] && given[1] == out[1];
    for (size_t d = 2; fits && d < out.size(); ++d) fits = given[d] >= out[d];
    if (!fits)
      fail(ctx.node, "output_shape " + dims_to_string(Dims(given.begin(), given.end())) +
                         " is smaller than the unpooled shape " + dims_to_string(out) + " or differs in N, C");
    out.assign(given.begin(), given.end());
  }
  return {{ctx.inputs[0].dtype, out}};
}

}  // namespace fusor
