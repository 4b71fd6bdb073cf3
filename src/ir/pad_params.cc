#include "ir/pad_params.h"

#include "ir/shape_util.h"

namespace fusor {
namespace {

// Normalises `axes` (empty: 0..rank-1) and rejects repeats.
std::vector<size_t> resolve_axes(const Node& node, int64_t rank, std::vector<int64_t> axes) {
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  std::vector<size_t> out;
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    auto ax = static_cast<size_t>(normalize_axis(a, rank, node));
    if (seen[ax]) fail(node, "axis " + std::to_string(a) + " is repeated");
    seen[ax] = true;
    out.push_back(ax);
  }
  return out;
}

}  // namespace

PadMode pad_mode(const Node& node) {
  const std::string mode = node.attr_string("mode", "constant");
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "edge") return PadMode::Edge;
  if (mode == "wrap" && node.opset >= 19) return PadMode::Wrap;
  fail(node, "unknown mode '" + mode + "' (expects constant, reflect, edge" +
                 (node.opset >= 19 ? ", wrap)" : ")"));
}

PadSpec resolve_pad(const Node& node, const Dims& in, const std::vector<int64_t>& pads,
                    std::vector<int64_t> axes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  const std::vector<size_t> ax = resolve_axes(node, rank, std::move(axes));
  if (pads.size() != 2 * ax.size())
    fail(node, "pads has " + std::to_string(pads.size()) + " values for " + std::to_string(ax.size()) +
                   " axes (expects 2 per axis)");
  PadSpec spec{pad_mode(node), std::vector<int64_t>(in.size(), 0), in};
  for (size_t i = 0; i < ax.size(); ++i) {
    const int64_t b = pads[i], e = pads[ax.size() + i], dim = in[ax[i]];
    int64_t out;
    if (__builtin_add_overflow(dim, b, &out) || __builtin_add_overflow(out, e, &out) || out < 0)
      fail(node, "pads " + std::to_string(b) + ", " + std::to_string(e) + " give axis " +
                     std::to_string(ax[i]) + " of size " + std::to_string(dim) + " an invalid size");
    if (dim == 0 && out > 0 && spec.mode != PadMode::Constant)
      fail(node, "cannot pad the empty axis " + std::to_string(ax[i]) + " in mode '" +
                     node.attr_string("mode", "constant") + "'");
    spec.begin[ax[i]] = b;
    spec.out_dims[ax[i]] = out;
  }
  return spec;
}

PadSpec resolve_center_crop_pad(const Node& node, const Dims& in, const std::vector<int64_t>& shape,
                                std::vector<int64_t> axes) {
  const std::vector<size_t> ax = resolve_axes(node, static_cast<int64_t>(in.size()), std::move(axes));
  if (shape.size() != ax.size())
    fail(node, "shape has " + std::to_string(shape.size()) + " values for " + std::to_string(ax.size()) +
                   " axes");
  PadSpec spec{PadMode::Constant, std::vector<int64_t>(in.size(), 0), in};
  for (size_t i = 0; i < ax.size(); ++i) {
    const int64_t want = shape[i], dim = in[ax[i]];
    if (want < 0) fail(node, "shape " + dims_to_string(shape) + " has a negative dimension");
    spec.begin[ax[i]] = want >= dim ? (want - dim) / 2 : -((dim - want) / 2);
    spec.out_dims[ax[i]] = want;
  }
  return spec;
}

}  // namespace fusor
