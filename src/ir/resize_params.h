// Resize (and Upsample) parameters resolved against a concrete input shape: the attributes
// parsed and checked once, and the per-axis scales and output dims. Shared by the shape function
// (plan-time constants) and the reference kernel (the same values as tensors), so both agree.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace fusor {

enum class ResizeMode { Nearest, Linear, Cubic };
// How an output coordinate maps back to an input coordinate (ONNX's
// coordinate_transformation_mode). Resize-10 and Upsample use Asymmetric.
enum class ResizeCoord {
  HalfPixel, HalfPixelSymmetric, PytorchHalfPixel, AlignCorners, Asymmetric, TfHalfPixelForNN,
  TfCropAndResize
};
// Nearest rounding of the input coordinate. Simple (Resize-10, Upsample, as ONNX Runtime does):
// floor when upsampling an axis, ceil when downsampling it.
enum class NearestRound { RoundPreferFloor, RoundPreferCeil, Floor, Ceil, Simple };

struct ResizeSpec {
  ResizeMode mode = ResizeMode::Nearest;
  ResizeCoord coord = ResizeCoord::HalfPixel;
  NearestRound nearest = NearestRound::RoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  bool antialias = false;
  double extrapolation_value = 0;
  std::vector<double> scales;  // per input axis (1 for the axes not resized)
  Dims out_dims;
};

// Where a node keeps its arguments: input positions (-1 when the node has no such input),
// or Upsample-7's `scales` attribute.
struct ResizeInputs {
  int roi = -1, scales = -1, sizes = -1;
};
ResizeInputs resize_inputs(const Node& node);

// `scales` and `sizes` as given (empty when absent or an empty tensor); exactly one must be
// non-empty. With `axes` they name those axes only. Throws naming `node` on bad attributes,
// non-positive scales, negative sizes, wrong lengths, or both or neither of scales and sizes.
ResizeSpec resolve_resize(const Node& node, const Dims& in, const std::vector<double>& scales,
                          const std::vector<int64_t>& sizes);

}  // namespace fusor
