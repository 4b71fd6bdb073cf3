#include "ir/layout_params.h"

#include <algorithm>
#include <limits>

#include "ir/shape_util.h"

namespace fusor {

SliceSpec resolve_slice(const Node& node, const Dims& in, const std::vector<int64_t>& starts,
                        const std::vector<int64_t>& ends, std::vector<int64_t> axes,
                        std::vector<int64_t> steps) {
  const int64_t rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size())
    fail(node, "starts has " + std::to_string(starts.size()) + " values but ends has " +
                   std::to_string(ends.size()));
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size())
    fail(node, "starts, ends, axes and steps must have the same length");

  SliceSpec spec{std::vector<int64_t>(in.size(), 0), std::vector<int64_t>(in.size(), 1), in};
  std::vector<bool> seen(in.size(), false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = normalize_axis(axes[i], rank, node);
    if (seen[static_cast<size_t>(axis)]) fail(node, "axis " + std::to_string(axes[i]) + " is repeated");
    seen[static_cast<size_t>(axis)] = true;
    const int64_t dim = in[static_cast<size_t>(axis)];
    const int64_t step = steps[i];
    if (step == 0) fail(node, "slice step must not be 0");
    // Negative values count from the end; INT64_MIN + dim cannot overflow since dim >= 0.
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t count;
    if (dim == 0) {
      count = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    spec.start[static_cast<size_t>(axis)] = count > 0 ? start : 0;
    spec.step[static_cast<size_t>(axis)] = step;
    spec.out_dims[static_cast<size_t>(axis)] = count;
  }
  return spec;
}

bool split_sizes_from_input(const Node& node, bool given) { return given && (node.opset >= 13 || node.opset == 1); }

std::vector<int64_t> split_sizes_of(const Node& node, const Tensor& sizes) {
  if (sizes.dtype() == DType::Int64 || sizes.dtype() == DType::Int32) return sizes.to_int64_vector();
  if (node.opset != 1 || !(sizes.dtype() == DType::Float32 || sizes.dtype() == DType::Float64))
    throw Error(node.describe() + ": split sizes must be int64, not " + dtype_name(sizes.dtype()));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < sizes.numel(); ++i) {
    const double v = sizes.dtype() == DType::Float32 ? sizes.data<float>()[i] : sizes.data<double>()[i];
    if (!(v >= 0 && v <= 1e15) || v != static_cast<double>(static_cast<int64_t>(v)))
      throw Error(node.describe() + ": split size " + std::to_string(v) + " is not a whole non-negative number");
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

std::vector<int64_t> resolve_split(const Node& node, int64_t dim, const std::vector<int64_t>* split,
                                   size_t num_outputs) {
  if (num_outputs == 0) fail(node, "Split has no outputs");
  if (split) {
    if (split->size() != num_outputs)
      fail(node, "split has " + std::to_string(split->size()) + " sizes for " +
                     std::to_string(num_outputs) + " outputs");
    int64_t total = 0;
    for (int64_t s : *split) {
      if (s < 0) fail(node, "split sizes must be non-negative");
      total += s;
    }
    if (total != dim)
      fail(node, "split sizes sum to " + std::to_string(total) + " but the axis has " +
                     std::to_string(dim) + " elements");
    return *split;
  }
  const int64_t n = static_cast<int64_t>(num_outputs);
  if (node.has_attr("num_outputs")) {
    if (node.attr_int("num_outputs", 0) != n)
      fail(node, "num_outputs is " + std::to_string(node.attr_int("num_outputs", 0)) +
                     " but the node has " + std::to_string(n) + " outputs");
  } else if (dim % n != 0) {
    fail(node, "cannot split an axis of " + std::to_string(dim) + " into " + std::to_string(n) +
                   " equal parts");
  }
  // Opset 18: chunks of ceil(dim / n), the last one smaller.
  const int64_t chunk = (dim + n - 1) / n;
  std::vector<int64_t> sizes(num_outputs);
  int64_t left = dim;
  for (auto& s : sizes) {
    s = std::min(chunk, left);
    left -= s;
  }
  return sizes;
}

SliceSpec resolve_slice_node(const Node& node, const Dims& in, const std::function<const Tensor*(size_t)>& input) {
  std::vector<int64_t> starts, ends, axes, steps;
  if (node.opset < 10) {
    starts = node.attr_ints("starts");
    ends = node.attr_ints("ends");
    axes = node.attr_ints("axes");
  } else {
    auto arg = [&](size_t i) {
      const Tensor* t = input(i);
      return t ? t->to_int64_vector() : std::vector<int64_t>{};
    };
    starts = arg(1);
    ends = arg(2);
    axes = arg(3);
    steps = arg(4);
  }
  return resolve_slice(node, in, starts, ends, axes, steps);
}

}  // namespace fusor
