// Shape functions of the layout ops (group B): data movement and shape arithmetic.
#include <algorithm>
#include <cmath>
#include <optional>

#include "ir/data_dependent.h"
#include "ir/graph.h"
#include "ir/input_checks.h"
#include "ir/layout_params.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor {
namespace {

int64_t rank_of(const InferContext& ctx, size_t i) { return static_cast<int64_t>(ctx.inputs[i].dims.size()); }

// Axes of Squeeze/Unsqueeze: the "axes" attribute before opset 13, optional input 1 from 13.
std::optional<std::vector<int64_t>> axes_arg(const InferContext& ctx) {
  if (ctx.node.opset < 13) {
    if (!ctx.node.has_attr("axes")) return std::nullopt;
    return ctx.node.attr_ints("axes");
  }
  if (!ctx.has_input(1)) return std::nullopt;
  return constant_ints(ctx, 1, "axes");
}

}  // namespace

std::vector<TensorType> shape::Transpose(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const Dims& in = ctx.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = ctx.node.attr_ints("perm");
  if (!ctx.node.has_attr("perm"))
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank)
    fail(ctx.node, "perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(rank));
  std::vector<bool> seen(in.size(), false);
  Dims out(in.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = normalize_axis(perm[i], rank, ctx.node);
    if (seen[static_cast<size_t>(p)]) fail(ctx.node, "perm " + dims_to_string(perm) + " is not a permutation");
    seen[static_cast<size_t>(p)] = true;
    out[i] = in[static_cast<size_t>(p)];
  }
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::Reshape(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  require_input(ctx, 1, "shape");
  const Dims& in = ctx.inputs[0].dims;
  std::vector<int64_t> shape = constant_ints(ctx, 1, "Reshape's target shape");
  const bool allowzero = ctx.node.opset >= 14 && ctx.node.attr_int("allowzero", 0) != 0;
  Dims out(shape.size());
  int infer_at = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d == -1) {
      if (infer_at >= 0) fail(ctx.node, "target shape " + dims_to_string(shape) + " has more than one -1");
      infer_at = static_cast<int>(i);
      continue;
    }
    if (d == 0 && !allowzero) {
      if (i >= in.size())
        fail(ctx.node, "target shape " + dims_to_string(shape) + " copies dim " + std::to_string(i) +
                           " (0) but the input " + dims_to_string(in) + " has rank " + std::to_string(in.size()));
      d = in[i];
    }
    if (d < 0) fail(ctx.node, "target shape " + dims_to_string(shape) + " has a negative dimension");
    out[i] = d;
    known *= d;
  }
  const int64_t total = numel_of(in);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      fail(ctx.node, "cannot reshape " + dims_to_string(in) + " to " + dims_to_string(shape));
    out[static_cast<size_t>(infer_at)] = total / known;
  } else if (known != total) {
    fail(ctx.node, "cannot reshape " + dims_to_string(in) + " (" + std::to_string(total) +
                       " elements) to " + dims_to_string(out) + " (" + std::to_string(known) + " elements)");
  }
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::Flatten(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  const Dims& in = ctx.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.node.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank)
    fail(ctx.node, "axis " + std::to_string(ctx.node.attr_int("axis", 1)) + " is out of range for rank " +
                       std::to_string(rank));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[static_cast<size_t>(i)];
  return {{ctx.inputs[0].dtype, {outer, inner}}};
}

std::vector<TensorType> shape::Squeeze(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const Dims& in = ctx.inputs[0].dims;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<bool> drop(in.size(), false);
  if (auto axes = axes_arg(ctx)) {
    for (int64_t a : *axes) {
      int64_t ax = normalize_axis(a, rank, ctx.node);
      if (in[static_cast<size_t>(ax)] != 1)
        fail(ctx.node, "cannot squeeze axis " + std::to_string(a) + " of shape " + dims_to_string(in) +
                           " (size is not 1)");
      drop[static_cast<size_t>(ax)] = true;
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  }
  Dims out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!drop[i]) out.push_back(in[i]);
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::Unsqueeze(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const Dims& in = ctx.inputs[0].dims;
  auto axes = axes_arg(ctx);
  if (!axes) fail(ctx.node, "Unsqueeze needs axes");
  const int64_t out_rank = static_cast<int64_t>(in.size() + axes->size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : *axes) {
    int64_t ax = normalize_axis(a, out_rank, ctx.node);
    if (inserted[static_cast<size_t>(ax)]) fail(ctx.node, "axis " + std::to_string(a) + " is repeated");
    inserted[static_cast<size_t>(ax)] = true;
  }
  Dims out;
  size_t next = 0;
  for (int64_t i = 0; i < out_rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[next++]);
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::Concat(const InferContext& ctx) {
  if (ctx.inputs.empty()) fail(ctx.node, "Concat needs at least one input");
  if (!ctx.node.has_attr("axis")) fail(ctx.node, "missing required attribute 'axis'");
  for (size_t i = 0; i < ctx.inputs.size(); ++i) require_input(ctx, i, "tensor");
  const TensorType& first = ctx.inputs[0];
  const int64_t rank = static_cast<int64_t>(first.dims.size());
  if (rank == 0) fail(ctx.node, "cannot concatenate scalars");
  const auto axis = static_cast<size_t>(normalize_axis(ctx.node.attr_int("axis", 0), rank, ctx.node));
  Dims out = first.dims;
  out[axis] = 0;
  for (const TensorType& t : ctx.inputs) {
    if (t.dtype != first.dtype)
      fail(ctx.node, std::string("inputs mix ") + dtype_name(first.dtype) + " and " + dtype_name(t.dtype));
    bool ok = t.dims.size() == first.dims.size();
    for (size_t d = 0; ok && d < t.dims.size(); ++d) ok = d == axis || t.dims[d] == first.dims[d];
    if (!ok)
      fail(ctx.node, "cannot concatenate " + dims_to_string(first.dims) + " with " + dims_to_string(t.dims) +
                         " on axis " + std::to_string(axis));
    out[axis] += t.dims[axis];
  }
  return {{first.dtype, out}};
}

std::vector<TensorType> shape::Split(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  const Dims& in = ctx.inputs[0].dims;
  if (in.empty()) fail(ctx.node, "cannot split a scalar");
  const auto axis = static_cast<size_t>(normalize_axis(ctx.node.attr_int("axis", 0), rank_of(ctx, 0), ctx.node));
  std::optional<std::vector<int64_t>> split;
  // Opsets 2-12 take the sizes as an attribute; 13 on as an input; 1 either way (the input first).
  if (split_sizes_from_input(ctx.node, ctx.has_input(1))) {
    split = split_sizes_of(ctx.node, known_value(ctx, 1, "split sizes"));
  } else if (ctx.node.opset < 13 && ctx.node.has_attr("split")) {
    split = ctx.node.attr_ints("split");
  }
  auto sizes = resolve_split(ctx.node, in[axis], split ? &*split : nullptr, ctx.node.outputs.size());
  std::vector<TensorType> out;
  for (int64_t s : sizes) {
    Dims d = in;
    d[axis] = s;
    out.push_back({ctx.inputs[0].dtype, d});
  }
  return out;
}

std::vector<TensorType> shape::Slice(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const Node& n = ctx.node;
  std::vector<int64_t> starts, ends, axes, steps;
  if (n.opset < 10) {
    if (!n.has_attr("starts") || !n.has_attr("ends")) fail(n, "missing attribute 'starts' or 'ends'");
    starts = n.attr_ints("starts");
    ends = n.attr_ints("ends");
    axes = n.attr_ints("axes");
  } else {
    require_input(ctx, 1, "starts");
    require_input(ctx, 2, "ends");
    starts = constant_ints(ctx, 1, "Slice starts");
    ends = constant_ints(ctx, 2, "Slice ends");
    if (ctx.has_input(3)) axes = constant_ints(ctx, 3, "Slice axes");
    if (ctx.has_input(4)) steps = constant_ints(ctx, 4, "Slice steps");
  }
  SliceSpec spec = resolve_slice(n, ctx.inputs[0].dims, starts, ends, axes, steps);
  return {{ctx.inputs[0].dtype, spec.out_dims}};
}

std::vector<TensorType> shape::Gather(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  require_input(ctx, 1, "indices");
  require_int_dtype(ctx, 1, "indices");
  const Dims& data = ctx.inputs[0].dims;
  if (data.empty()) fail(ctx.node, "data must have rank >= 1");
  const auto axis = static_cast<size_t>(normalize_axis(ctx.node.attr_int("axis", 0), rank_of(ctx, 0), ctx.node));
  Dims out(data.begin(), data.begin() + static_cast<long>(axis));
  out.insert(out.end(), ctx.inputs[1].dims.begin(), ctx.inputs[1].dims.end());
  out.insert(out.end(), data.begin() + static_cast<long>(axis) + 1, data.end());
  return {{ctx.inputs[0].dtype, out}};
}

std::vector<TensorType> shape::Trilu(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  if (ctx.inputs[0].dims.size() < 2)
    fail(ctx.node, "input must have rank >= 2, got " + dims_to_string(ctx.inputs[0].dims));
  if (ctx.has_input(1)) require_int_dtype(ctx, 1, "k");
  return same_as_input(ctx, 0);
}

std::vector<TensorType> shape::Shape(const InferContext& ctx) {
  require_input(ctx, 0, "data");
  const int64_t rank = rank_of(ctx, 0);
  auto clip = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + rank : v, 0, rank); };
  int64_t start = 0, end = rank;
  if (ctx.node.opset >= 15) {
    start = clip(ctx.node.attr_int("start", 0));
    if (ctx.node.has_attr("end")) end = clip(ctx.node.attr_int("end", rank));
  }
  return {{DType::Int64, {std::max<int64_t>(end - start, 0)}}};
}

std::vector<TensorType> shape::ConstantOfShape(const InferContext& ctx) {
  require_input(ctx, 0, "input");
  if (ctx.inputs[0].dtype != DType::Int64)
    fail(ctx.node, std::string("shape input must be int64, got ") + dtype_name(ctx.inputs[0].dtype));
  Dims dims = constant_ints(ctx, 0, "ConstantOfShape's shape");
  for (int64_t d : dims)
    if (d < 0) fail(ctx.node, "shape " + dims_to_string(dims) + " has a negative dimension");
  DType dtype = DType::Float32;
  if (const Tensor* value = ctx.node.attr_tensor("value")) {
    if (value->numel() != 1) fail(ctx.node, "attribute 'value' must hold exactly one element");
    dtype = value->dtype();
  }
  return {{dtype, dims}};
}

std::vector<TensorType> shape::Range(const InferContext& ctx) {
  for (size_t i = 0; i < 3; ++i) require_input(ctx, i, "start/limit/delta");
  const DType t = ctx.inputs[0].dtype;
  if (ctx.inputs[1].dtype != t || ctx.inputs[2].dtype != t)
    fail(ctx.node, "start, limit and delta must have the same dtype");
  const char* names[3] = {"Range start", "Range limit", "Range delta"};
  const Tensor* v[3];
  for (size_t i = 0; i < 3; ++i) {
    v[i] = &known_value(ctx, i, names[i]);  // else the model is planned per run
    if (v[i]->numel() != 1) fail(ctx.node, std::string(names[i]) + " must be a scalar");
  }
  int64_t count;
  if (t == DType::Float32 || t == DType::Float64) {
    double start = v[0]->scalar_as_double(), limit = v[1]->scalar_as_double(), delta = v[2]->scalar_as_double();
    if (delta == 0) fail(ctx.node, "delta must not be 0");
    count = static_cast<int64_t>(std::max(std::ceil((limit - start) / delta), 0.0));
  } else if (t == DType::Int64 || t == DType::Int32) {
    int64_t start = v[0]->to_int64_vector()[0], limit = v[1]->to_int64_vector()[0],
            delta = v[2]->to_int64_vector()[0];
    if (delta == 0) fail(ctx.node, "delta must not be 0");
    if (delta > 0) count = limit > start ? (limit - start + delta - 1) / delta : 0;
    else count = start > limit ? (start - limit - delta - 1) / -delta : 0;
  } else {
    fail(ctx.node, std::string("unsupported dtype ") + dtype_name(t) + " (expects float or int)");
  }
  return {{t, {count}}};
}

}  // namespace fusor
