#include "kernels/ref/resize_taps.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fusor::ref {
namespace {

double source_coord(const ResizeSpec& s, int64_t xi, double scale, int64_t in, int64_t out, double roi0,
                    double roi1) {
  const double x = static_cast<double>(xi), len = static_cast<double>(in);
  const double width = scale * len;  // the output length before flooring
  // v / scale; with the scale out / in (from sizes) as in * v / out, exact where the coordinate
  // is a whole pixel: 12.5 / (25 / 31.) is 15.500000000000002, and Resize's ceil took pixel 16.
  const bool exact_ratio = scale == static_cast<double>(out) / len;
  auto unscaled = [&](double v) { return exact_ratio ? v * len / static_cast<double>(out) : v / scale; };
  switch (s.coord) {
    case ResizeCoord::HalfPixel: return unscaled(x + 0.5) - 0.5;
    case ResizeCoord::HalfPixelSymmetric: {
      // len / 2 * (1 - out / width), written so that it rounds once: 1 - 15 / 15.5 was inexact,
      // and the offset 0.49999999999999994 moved floor's pixel 1 to 0.
      const double offset = len * (width - static_cast<double>(out)) / (2 * width);
      return offset + unscaled(x + 0.5) - 0.5;
    }
    // 0 for one output pixel, as the spec and ONNX Runtime (onnx.reference takes -0.5).
    case ResizeCoord::PytorchHalfPixel: return out == 1 ? 0.0 : unscaled(x + 0.5) - 0.5;
    case ResizeCoord::AlignCorners: return width == 1 ? 0.0 : x * (len - 1) / (width - 1);
    case ResizeCoord::Asymmetric: return x / scale;
    case ResizeCoord::TfHalfPixelForNN: return (x + 0.5) / scale;
    case ResizeCoord::TfCropAndResize:
      return (width == 1 ? (roi1 - roi0) * (len - 1) / 2 : x * (roi1 - roi0) * (len - 1) / (width - 1)) +
             roi0 * (len - 1);
  }
  return 0;
}

double cubic_weight(double x, double a) {
  x = std::fabs(x);
  if (x <= 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0;
}

// Weights of the taps at offsets first, first+1, ... from i0 = ceil(x) - 1, where the input
// coordinate is x = i0 + ratio with ratio in (0, 1].
std::vector<double> tap_weights(const ResizeSpec& s, double ratio, double scale, int64_t& first) {
  std::vector<double> w;
  if (s.mode == ResizeMode::Nearest) {
    first = 0;
    NearestRound round = s.nearest;
    if (round == NearestRound::Simple) round = scale < 1 ? NearestRound::Ceil : NearestRound::Floor;
    bool upper = true;  // an integer coordinate (ratio 1) is the upper tap itself
    if (ratio < 1) {
      switch (round) {
        case NearestRound::RoundPreferFloor: upper = ratio > 0.5; break;
        case NearestRound::RoundPreferCeil: upper = ratio >= 0.5; break;
        case NearestRound::Floor: upper = false; break;
        case NearestRound::Ceil:
        case NearestRound::Simple: upper = true; break;
      }
    }
    return upper ? std::vector<double>{0, 1} : std::vector<double>{1, 0};
  }
  // Antialiasing stretches the kernel by 1/scale when downsampling, so more taps contribute.
  const double support = s.mode == ResizeMode::Linear ? 1 : 2;
  const double kscale = s.antialias ? std::min(scale, 1.0) : 1.0;
  first = s.antialias ? static_cast<int64_t>(std::floor(-support / kscale)) + 1 : 1 - static_cast<int64_t>(support);
  const int64_t n = 2 - 2 * first;
  for (int64_t k = first; k < first + n; ++k) {
    const double x = (static_cast<double>(k) - ratio) * kscale;
    w.push_back(s.mode == ResizeMode::Linear ? std::clamp(1 - std::fabs(x), 0.0, 1.0) : cubic_weight(x, s.cubic_a));
  }
  if (s.antialias) {
    const double sum = std::accumulate(w.begin(), w.end(), 0.0);
    for (double& v : w) v /= sum;
  }
  return w;
}

}  // namespace

AxisTaps axis_taps(const ResizeSpec& s, int64_t in, int64_t out, double scale, double roi0, double roi1) {
  AxisTaps t;
  t.outside.assign(static_cast<size_t>(out), 0);
  for (int64_t x = 0; x < out; ++x) {
    const double raw = source_coord(s, x, scale, in, out, roi0, roi1);
    const double xo = std::isnan(raw) ? 0.0 : std::clamp(raw, -1e15, 1e15);  // keeps the cast below defined
    int64_t first = 0;
    const auto i0 = static_cast<int64_t>(std::ceil(xo)) - 1;
    std::vector<double> w = tap_weights(s, xo - static_cast<double>(i0), scale, first);
    const auto n = static_cast<int64_t>(w.size());
    t.taps = static_cast<int>(n);
    if (s.coord == ResizeCoord::TfCropAndResize && !(raw >= 0 && raw <= static_cast<double>(in - 1))) {
      t.outside[static_cast<size_t>(x)] = 1;
      t.any_outside = true;
      t.index.insert(t.index.end(), static_cast<size_t>(n), 0);
      t.weight.insert(t.weight.end(), static_cast<size_t>(n), 0.0);
      continue;
    }
    // The window of n taps stays inside the input padded by n/2 on each side.
    const int64_t m = n / 2;
    const int64_t start = std::clamp(i0 + first, -m, std::max(in - m, -m));
    if (s.exclude_outside) {
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        if (start + j < 0 || start + j >= in) w[static_cast<size_t>(j)] = 0;
        sum += w[static_cast<size_t>(j)];
      }
      if (sum != 0)
        for (double& v : w) v /= sum;
    }
    for (int64_t j = 0; j < n; ++j) {
      t.index.push_back(std::clamp<int64_t>(start + j, 0, in - 1));
      t.weight.push_back(w[static_cast<size_t>(j)]);
    }
  }
  return t;
}

bool is_identity(const AxisTaps& t, int64_t in, int64_t out) {
  if (in != out || t.any_outside) return false;
  for (int64_t x = 0; x < out; ++x)
    for (int j = 0; j < t.taps; ++j) {
      const size_t k = static_cast<size_t>(x * t.taps + j);
      if (t.weight[k] != 0 && (t.index[k] != x || t.weight[k] != 1)) return false;
    }
  return true;
}

std::vector<int64_t> single_taps(const AxisTaps& t, int64_t out) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  for (int64_t x = 0; x < out; ++x) {
    int64_t best = 0;
    for (int j = 0; j < t.taps; ++j)
      if (t.weight[static_cast<size_t>(x * t.taps + j)] == 1) best = t.index[static_cast<size_t>(x * t.taps + j)];
    idx[static_cast<size_t>(x)] = best;
  }
  return idx;
}

}  // namespace fusor::ref
