#include "ir/resize_params.h"

#include <algorithm>
#include <cmath>

#include "ir/shape_util.h"

namespace fusor {
namespace {

template <class E, size_t N>
E parse(const Node& node, const char* attr, const char* fallback, const std::pair<const char*, E> (&names)[N]) {
  const std::string v = node.attr_string(attr, fallback);
  std::string known;
  for (const auto& [name, e] : names) {
    if (v == name) return e;
    known += (known.empty() ? "" : ", ") + std::string(name);
  }
  fail(node, std::string("unknown ") + attr + " '" + v + "' (expects " + known + ")");
}

constexpr std::pair<const char*, ResizeMode> kModes[] = {
    {"nearest", ResizeMode::Nearest}, {"linear", ResizeMode::Linear}, {"cubic", ResizeMode::Cubic}};
constexpr std::pair<const char*, ResizeMode> kUpsampleModes[] = {
    {"nearest", ResizeMode::Nearest}, {"linear", ResizeMode::Linear}, {"bilinear", ResizeMode::Linear}};
constexpr std::pair<const char*, ResizeCoord> kCoords[] = {
    {"half_pixel", ResizeCoord::HalfPixel},
    {"half_pixel_symmetric", ResizeCoord::HalfPixelSymmetric},
    {"pytorch_half_pixel", ResizeCoord::PytorchHalfPixel},
    {"align_corners", ResizeCoord::AlignCorners},
    {"asymmetric", ResizeCoord::Asymmetric},
    {"tf_half_pixel_for_nn", ResizeCoord::TfHalfPixelForNN},
    {"tf_crop_and_resize", ResizeCoord::TfCropAndResize}};
constexpr std::pair<const char*, NearestRound> kNearest[] = {
    {"round_prefer_floor", NearestRound::RoundPreferFloor},
    {"round_prefer_ceil", NearestRound::RoundPreferCeil},
    {"floor", NearestRound::Floor},
    {"ceil", NearestRound::Ceil}};
enum class AspectPolicy { Stretch, NotLarger, NotSmaller };
constexpr std::pair<const char*, AspectPolicy> kPolicies[] = {
    {"stretch", AspectPolicy::Stretch}, {"not_larger", AspectPolicy::NotLarger},
    {"not_smaller", AspectPolicy::NotSmaller}};

// Resize-11 and later read every attribute; Resize-10 and Upsample only `mode`.
ResizeSpec parse_attributes(const Node& node) {
  ResizeSpec s;
  const bool upsample = node.op == Op::Upsample;
  s.mode = upsample ? parse(node, "mode", "nearest", kUpsampleModes) : parse(node, "mode", "nearest", kModes);
  if (upsample || node.opset < 11) {
    s.coord = ResizeCoord::Asymmetric;
    s.nearest = NearestRound::Simple;
    if (s.mode == ResizeMode::Cubic) fail(node, "mode 'cubic' needs Resize-11 or later");
    return s;
  }
  s.coord = parse(node, "coordinate_transformation_mode", "half_pixel", kCoords);
  s.nearest = parse(node, "nearest_mode", "round_prefer_floor", kNearest);
  s.cubic_a = node.attr_float("cubic_coeff_a", -0.75f);
  s.exclude_outside = node.attr_int("exclude_outside", 0) != 0;
  s.extrapolation_value = node.attr_float("extrapolation_value", 0.0f);
  s.antialias = node.opset >= 18 && node.attr_int("antialias", 0) != 0;
  return s;
}

}  // namespace

ResizeInputs resize_inputs(const Node& node) {
  if (node.op == Op::Upsample) return {-1, node.opset >= 9 ? 1 : -1, -1};
  if (node.opset < 11) return {-1, 1, -1};
  return {1, 2, 3};
}

ResizeSpec resolve_resize(const Node& node, const Dims& in, const std::vector<double>& scales,
                          const std::vector<int64_t>& sizes) {
  if (node.op == Op::Upsample && node.opset < 7) fail(node, "Upsample before opset 7 is not supported");
  ResizeSpec s = parse_attributes(node);
  const int64_t rank = static_cast<int64_t>(in.size());
  if (scales.empty() == sizes.empty())
    fail(node, scales.empty() ? "needs scales or sizes (both are empty)"
                              : "takes scales or sizes, not both");

  std::vector<size_t> axes;
  if (node.opset >= 18 && node.has_attr("axes")) {
    std::vector<bool> seen(in.size(), false);
    for (int64_t a : node.attr_ints("axes")) {
      auto ax = static_cast<size_t>(normalize_axis(a, rank, node));
      if (seen[ax]) fail(node, "axis " + std::to_string(a) + " is repeated");
      seen[ax] = true;
      axes.push_back(ax);
    }
  } else {
    for (size_t a = 0; a < in.size(); ++a) axes.push_back(a);
  }
  const size_t given = scales.empty() ? sizes.size() : scales.size();
  if (given != axes.size())
    fail(node, std::string(scales.empty() ? "sizes" : "scales") + " has " + std::to_string(given) +
                   " values for " + std::to_string(axes.size()) + " axes");

  s.scales.assign(in.size(), 1.0);
  s.out_dims = in;
  if (!scales.empty()) {
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(scales[i] > 0) || !std::isfinite(scales[i]))
        fail(node, "scale " + std::to_string(scales[i]) + " must be positive");
      const double out = std::floor(scales[i] * static_cast<double>(in[axes[i]]));
      if (out > 1e15) fail(node, "scale " + std::to_string(scales[i]) + " gives a too large output");
      s.scales[axes[i]] = scales[i];
      s.out_dims[axes[i]] = static_cast<int64_t>(out);
    }
    return s;
  }
  const AspectPolicy policy = parse(node, "keep_aspect_ratio_policy", "stretch", kPolicies);
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) fail(node, "sizes " + dims_to_string(sizes) + " has a negative size");
    if (in[axes[i]] == 0 && sizes[i] != 0)
      fail(node, "cannot resize the empty axis " + std::to_string(axes[i]) + " to " + std::to_string(sizes[i]));
    s.scales[axes[i]] = in[axes[i]] ? static_cast<double>(sizes[i]) / static_cast<double>(in[axes[i]]) : 1.0;
    s.out_dims[axes[i]] = sizes[i];
  }
  if (policy != AspectPolicy::Stretch && node.opset >= 18) {
    // One scale for every named axis, the one that keeps the result inside (not_larger) or
    // covering (not_smaller) the requested box; sizes round half up.
    double scale = s.scales[axes[0]];
    for (size_t a : axes)
      scale = policy == AspectPolicy::NotLarger ? std::min(scale, s.scales[a]) : std::max(scale, s.scales[a]);
    for (size_t a : axes) {
      s.scales[a] = scale;
      s.out_dims[a] = static_cast<int64_t>(scale * static_cast<double>(in[a]) + 0.5);
    }
  }
  return s;
}

}  // namespace fusor
