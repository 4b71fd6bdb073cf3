// Attributes of the spatial-sampling ops (GridSample, RoiAlign), read and checked in one place
// for their shape functions and kernels.
#pragma once
#include "ir/graph.h"

namespace fusor {

enum class GridSampleMode { Nearest, Linear, Cubic };
enum class GridSamplePadding { Zeros, Border, Reflection };

struct GridSampleParams {
  GridSampleMode mode = GridSampleMode::Linear;
  GridSamplePadding padding = GridSamplePadding::Zeros;
  bool align_corners = false;
};

// Opset 16 names the modes bilinear/nearest/bicubic, opset 20 linear/nearest/cubic.
GridSampleParams grid_sample_params(const Node& node);

struct RoiAlignParams {
  bool max = false;         // mode "max", else "avg"
  bool half_pixel = false;  // coordinate_transformation_mode (opset 16+; opset 10 is output_half_pixel)
  int64_t output_height = 1, output_width = 1;
  int64_t sampling_ratio = 0;  // 0: adaptive, ceil(roi size / output size)
  double spatial_scale = 1.0;
};

RoiAlignParams roi_align_params(const Node& node);

}  // namespace fusor
