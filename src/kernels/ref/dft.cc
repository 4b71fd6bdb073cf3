// Reference DFT and STFT: a direct O(n^2) transform per line in double, with the twiddle
// factors tabulated once per length (index k*n mod n keeps them exact for every k).
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "ir/shape_util.h"
#include "ir/spectral_params.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

using Complex = std::complex<double>;

class Transform {
 public:
  Transform(int64_t length, bool inverse) : n_(length), inverse_(inverse), twiddle_(static_cast<size_t>(length)) {
    const double sign = inverse ? 1.0 : -1.0;
    for (int64_t m = 0; m < n_; ++m) {
      double angle = 2.0 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(n_);
      twiddle_[static_cast<size_t>(m)] = Complex(std::cos(angle), sign * std::sin(angle));
    }
  }
  // `in` holds length values (already zero-padded or truncated); writes the first out_len bins.
  void run(const Complex* in, int64_t out_len, Complex* out) const {
    const double scale = inverse_ ? 1.0 / static_cast<double>(n_) : 1.0;
    for (int64_t k = 0; k < out_len; ++k) {
      Complex s = 0;
      for (int64_t n = 0, m = 0; n < n_; ++n, m = (m + k) % n_) s += in[n] * twiddle_[static_cast<size_t>(m)];
      out[k] = s * scale;
    }
  }

 private:
  int64_t n_;
  bool inverse_;
  std::vector<Complex> twiddle_;
};

}  // namespace

void DFT(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const int64_t rank = static_cast<int64_t>(x.rank());
  const auto axis = static_cast<size_t>(dft_axis(node, inputs.size() > 2 ? &inputs[2] : nullptr, rank));
  const int64_t n_in = x.dims()[axis], channels = x.dims().back();
  const int64_t length = inputs.size() > 1 && inputs[1].defined() ? inputs[1].to_int64_vector().at(0) : n_in;
  const int64_t out_len = y.dims()[axis];
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d + 1 < x.rank(); ++d)
    if (d < axis) outer *= x.dims()[d];
    else if (d > axis) inner *= x.dims()[d];
  const Transform transform(length, node.attr_int("inverse", 0) != 0);
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = x.data<T>();
    T* dst = y.data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t line = 0; line < outer * inner; ++line) {
      const int64_t o = line / inner, i = line % inner;
      std::vector<Complex> in(static_cast<size_t>(length)), out(static_cast<size_t>(out_len));
      for (int64_t n = 0; n < std::min(n_in, length); ++n) {
        const T* v = src + ((o * n_in + n) * inner + i) * channels;
        in[static_cast<size_t>(n)] = Complex(static_cast<double>(v[0]), channels == 2 ? static_cast<double>(v[1]) : 0.0);
      }
      transform.run(in.data(), out_len, out.data());
      for (int64_t k = 0; k < out_len; ++k) {
        T* w = dst + ((o * out_len + k) * inner + i) * 2;
        w[0] = static_cast<T>(out[static_cast<size_t>(k)].real());
        w[1] = static_cast<T>(out[static_cast<size_t>(k)].imag());
      }
    }
  });
}

void STFT(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const int64_t batch = x.dim(0), samples = x.dim(1), channels = x.dim(2);
  const int64_t step = inputs[1].to_int64_vector().at(0);
  const bool has_window = inputs.size() > 2 && inputs[2].defined();
  const int64_t frames = y.dim(1), bins = y.dim(2);
  int64_t length = has_window ? inputs[2].dim(0) : samples;
  if (inputs.size() > 3 && inputs[3].defined()) length = inputs[3].to_int64_vector().at(0);
  if ((frames - 1) * step + length > samples) fail(node, "frames run past the end of the signal");
  const Transform transform(length, false);
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = x.data<T>();
    const T* window = has_window ? inputs[2].data<T>() : nullptr;
    T* dst = y.data<T>();
#pragma omp parallel for schedule(static)
    for (int64_t line = 0; line < batch * frames; ++line) {
      const int64_t b = line / frames, f = line % frames;
      std::vector<Complex> in(static_cast<size_t>(length)), out(static_cast<size_t>(bins));
      for (int64_t n = 0; n < length; ++n) {
        const T* v = src + (b * samples + f * step + n) * channels;
        double w = window ? static_cast<double>(window[n]) : 1.0;
        in[static_cast<size_t>(n)] = w * Complex(static_cast<double>(v[0]), channels == 2 ? static_cast<double>(v[1]) : 0.0);
      }
      transform.run(in.data(), bins, out.data());
      T* w = dst + line * bins * 2;
      for (int64_t k = 0; k < bins; ++k) {
        w[2 * k] = static_cast<T>(out[static_cast<size_t>(k)].real());
        w[2 * k + 1] = static_cast<T>(out[static_cast<size_t>(k)].imag());
      }
    }
  });
}

}  // namespace fusor::ref
