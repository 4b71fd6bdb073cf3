// Reference window generators (Hann, Hamming, Blackman) and MelWeightMatrix. Values are computed
// in double and cast to output_datatype.
#include <cmath>
#include <numbers>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

template <class T>
void write_doubles(Tensor& out, const std::vector<double>& v) {
  T* p = out.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
}

void store(const Node& node, Tensor& out, const std::vector<double>& v) {
  visit_dtype(out.dtype(), node, [&](auto* tag) { write_doubles<elem_t<decltype(tag)>>(out, v); });
}

// A sum of cosines a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), N = size (periodic) or
// size - 1 (symmetric; a symmetric window of one sample is 1).
void cosine_window(const Node& node, Tensor& out, double a0, double a1, double a2) {
  const int64_t size = out.dim(0);
  const bool periodic = node.attr_int("periodic", 1) != 0;
  const double period = static_cast<double>(periodic ? size : size - 1);
  std::vector<double> v(static_cast<size_t>(size), 1.0);
  if (period > 0)
    for (int64_t n = 0; n < size; ++n) {
      double phase = 2.0 * std::numbers::pi * static_cast<double>(n) / period;
      v[static_cast<size_t>(n)] = a0 - a1 * std::cos(phase) + a2 * std::cos(2.0 * phase);
    }
  store(node, out, v);
}

double hertz_to_mel(double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); }
double mel_to_hertz(double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); }

}  // namespace

void HannWindow(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  cosine_window(node, outputs[0], 0.5, 0.5, 0.0);
}

void HammingWindow(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  cosine_window(node, outputs[0], 25.0 / 46.0, 21.0 / 46.0, 0.0);
}

void BlackmanWindow(const Node& node, std::span<const Tensor>, std::span<Tensor> outputs) {
  cosine_window(node, outputs[0], 0.42, 0.5, 0.08);
}

// Triangular filters between num_mel_bins + 2 points spaced evenly on the mel scale, each
// mapped to the spectrogram bin floor((dft_length + 1) * hz / sample_rate).
void MelWeightMatrix(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  Tensor& out = outputs[0];
  const int64_t spectrogram_bins = out.dim(0), mel_bins = out.dim(1);
  const int64_t dft_length = inputs[1].to_int64_vector().at(0), rate = inputs[2].to_int64_vector().at(0);
  const double low = inputs[3].scalar_as_double(), high = inputs[4].scalar_as_double();
  const double low_mel = hertz_to_mel(low);
  const double step = (hertz_to_mel(high) - low_mel) / static_cast<double>(mel_bins + 2);
  std::vector<int64_t> edge(static_cast<size_t>(mel_bins + 2));
  for (int64_t i = 0; i < mel_bins + 2; ++i) {
    double hz = mel_to_hertz(static_cast<double>(i) * step + low_mel);
    double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(rate));
    if (!(bin >= 0.0 && bin <= static_cast<double>(spectrogram_bins)))
      fail(node, "edge frequencies " + std::to_string(low) + " and " + std::to_string(high) +
                     " Hz put a mel filter outside the spectrogram bins", ErrorKind::InvalidArgument);
    edge[static_cast<size_t>(i)] = static_cast<int64_t>(bin);
  }
  std::vector<double> w(static_cast<size_t>(spectrogram_bins * mel_bins), 0.0);
  auto at = [&](int64_t bin, int64_t mel) -> double& {
    if (bin < 0 || bin >= spectrogram_bins) fail(node, "a mel filter falls outside the spectrogram bins", ErrorKind::InvalidArgument);
    return w[static_cast<size_t>(bin * mel_bins + mel)];
  };
  for (int64_t m = 0; m < mel_bins; ++m) {
    const int64_t lo = edge[static_cast<size_t>(m)], mid = edge[static_cast<size_t>(m + 1)],
                  hi = edge[static_cast<size_t>(m + 2)];
    if (mid == lo) at(mid, m) = 1.0;
    for (int64_t j = lo; mid > lo && j <= mid; ++j) at(j, m) = static_cast<double>(j - lo) / static_cast<double>(mid - lo);
    for (int64_t j = mid; hi > mid && j < hi; ++j) at(j, m) = static_cast<double>(hi - j) / static_cast<double>(hi - mid);
  }
  store(node, out, w);
}

}  // namespace fusor::ref
