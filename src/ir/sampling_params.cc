#include "ir/sampling_params.h"

#include "ir/shape_util.h"

namespace fusor {

GridSampleParams grid_sample_params(const Node& node) {
  GridSampleParams p;
  const bool v20 = node.opset >= 20;
  std::string mode = node.attr_string("mode", v20 ? "linear" : "bilinear");
  if (mode == "nearest") p.mode = GridSampleMode::Nearest;
  else if (mode == (v20 ? "linear" : "bilinear")) p.mode = GridSampleMode::Linear;
  else if (mode == (v20 ? "cubic" : "bicubic")) p.mode = GridSampleMode::Cubic;
  else
    fail(node, "unknown mode '" + mode + (v20 ? "' (expects linear, nearest or cubic)" : "' (expects bilinear, nearest or bicubic)"),
         ErrorKind::InvalidModel);
  std::string padding = node.attr_string("padding_mode", "zeros");
  if (padding == "zeros") p.padding = GridSamplePadding::Zeros;
  else if (padding == "border") p.padding = GridSamplePadding::Border;
  else if (padding == "reflection") p.padding = GridSamplePadding::Reflection;
  else fail(node, "unknown padding_mode '" + padding + "' (expects zeros, border or reflection)", ErrorKind::InvalidModel);
  int64_t align = node.attr_int("align_corners", 0);
  if (align != 0 && align != 1) fail(node, "align_corners must be 0 or 1, got " + std::to_string(align), ErrorKind::InvalidModel);
  p.align_corners = align == 1;
  return p;
}

RoiAlignParams roi_align_params(const Node& node) {
  RoiAlignParams p;
  std::string mode = node.attr_string("mode", "avg");
  if (mode != "avg" && mode != "max") fail(node, "unknown mode '" + mode + "' (expects avg or max)", ErrorKind::InvalidModel);
  p.max = mode == "max";
  std::string ctm = node.attr_string("coordinate_transformation_mode", node.opset >= 16 ? "half_pixel" : "output_half_pixel");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    fail(node, "unknown coordinate_transformation_mode '" + ctm + "' (expects half_pixel or output_half_pixel)",
         ErrorKind::InvalidModel);
  p.half_pixel = ctm == "half_pixel";
  p.output_height = node.attr_int("output_height", 1);
  p.output_width = node.attr_int("output_width", 1);
  p.sampling_ratio = node.attr_int("sampling_ratio", 0);
  p.spatial_scale = node.attr_float("spatial_scale", 1.0f);
  if (p.output_height < 1 || p.output_width < 1)
    fail(node, "output_height and output_width must be positive", ErrorKind::InvalidModel);
  if (p.sampling_ratio < 0) fail(node, "sampling_ratio must be non-negative", ErrorKind::InvalidModel);
  return p;
}

}  // namespace fusor
