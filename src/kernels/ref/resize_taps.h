// The tap tables of Resize (kernels/ref/resize.cc): along one axis, each output position maps
// to an input coordinate (coordinate_transformation_mode), then to a few input elements with
// weights (nearest: the one chosen; linear: 2; cubic: 4; antialiased downsampling: a window
// widened by 1/scale). Every ONNX resize mode is separable, so one table per axis says it all.
// ONNX's reference implementation is followed in its details: the input is edge-padded for the
// taps, the ratio of an integer coordinate is 1 (not 0), and a window that would leave the padded
// input is shifted back inside it.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/resize_params.h"

namespace fusor::ref {

// Taps of one axis: `taps` (index, weight) pairs per output position, indices already clamped
// into the input. `outside` marks tf_crop_and_resize positions outside the input (the
// extrapolation value instead of the taps).
struct AxisTaps {
  int taps = 0;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<uint8_t> outside;
  bool any_outside = false;
};

// The table of an axis of `in` elements resized to `out` with `scale`; roi0 and roi1 are the
// axis' region of interest (tf_crop_and_resize only).
AxisTaps axis_taps(const ResizeSpec& s, int64_t in, int64_t out, double scale, double roi0, double roi1);

// True when the axis reads every input element straight through.
bool is_identity(const AxisTaps& t, int64_t in, int64_t out);

// Nearest: the input index of the one tap of weight 1 per output position.
std::vector<int64_t> single_taps(const AxisTaps& t, int64_t out);

}  // namespace fusor::ref
