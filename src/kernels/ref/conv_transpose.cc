// Reference ConvTranspose for 1 to 3 spatial dims: each input value, times each kernel tap,
// is added at output position i * stride + k * dilation - pad_begin (ir/conv_transpose_geometry.h).
// One job per (image, output channel) accumulates its plane in double.
#include <algorithm>
#include <vector>

#include "ir/conv_transpose_geometry.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/window.h"

namespace fusor::ref {
void ConvTranspose(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const Tensor& wt = inputs[1];
  const Tensor* bias = inputs.size() > 2 && inputs[2].defined() ? &inputs[2] : nullptr;
  Tensor& y = outputs[0];
  const Dims kernel(wt.dims().begin() + 2, wt.dims().end());
  const auto axes = conv_transpose_axes(node, x.dims(), kernel);
  Window w;  // the same geometry, padded to three spatial dims
  const size_t off = 3 - axes.size();
  for (size_t i = 0; i < axes.size(); ++i) {
    w.in[off + i] = axes[i].in;
    w.out[off + i] = axes[i].out;
    w.k[off + i] = axes[i].kernel;
    w.s[off + i] = axes[i].stride;
    w.d[off + i] = axes[i].dilation;
    w.pb[off + i] = axes[i].pad_begin;
    if (y.dim(static_cast<int64_t>(i) + 2) != axes[i].out) fail(node, "output shape differs from the attributes'");
  }
  const int64_t batch = x.dim(0), c_in = x.dim(1), c_out = y.dim(1);
  const int64_t group = node.attr_int("group", 1);
  const int64_t cg = c_in / group, mg = c_out / group;
  const int64_t kvol = w.k[0] * w.k[1] * w.k[2];
  const int64_t in_vol = w.in[0] * w.in[1] * w.in[2];
  const int64_t out_vol = w.out[0] * w.out[1] * w.out[2];
  const int64_t jobs = batch * c_out;

  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    const T* pw = wt.data<T>();
    const T* pbias = bias ? bias->data<T>() : nullptr;
    T* py = y.data<T>();
#pragma omp parallel
    {
      std::vector<double> acc(static_cast<size_t>(out_vol));
#pragma omp for schedule(dynamic)
      for (int64_t job = 0; job < jobs; ++job) {
        const int64_t n = job / c_out, oc = job % c_out, g = oc / mg, m = oc % mg;
        std::fill(acc.begin(), acc.end(), pbias ? static_cast<double>(pbias[oc]) : 0.0);
        for (int64_t c = 0; c < cg; ++c) {
          const int64_t ci = g * cg + c;
          const T* xc = px + (n * c_in + ci) * in_vol;
          const T* wk = pw + (ci * mg + m) * kvol;  // W is [C, M / group, kernel...]
          for (int64_t kz = 0; kz < w.k[0]; ++kz)
            for (int64_t ky = 0; ky < w.k[1]; ++ky)
              for (int64_t kx = 0; kx < w.k[2]; ++kx) {
                const double wv = static_cast<double>(wk[(kz * w.k[1] + ky) * w.k[2] + kx]);
                for (int64_t iz = 0; iz < w.in[0]; ++iz) {
                  const int64_t oz = iz * w.s[0] + kz * w.d[0] - w.pb[0];
                  if (oz < 0 || oz >= w.out[0]) continue;
                  for (int64_t iy = 0; iy < w.in[1]; ++iy) {
                    const int64_t oy = iy * w.s[1] + ky * w.d[1] - w.pb[1];
                    if (oy < 0 || oy >= w.out[1]) continue;
                    const T* xrow = xc + (iz * w.in[1] + iy) * w.in[2];
                    double* arow = acc.data() + (oz * w.out[1] + oy) * w.out[2];
                    for (int64_t ix = 0; ix < w.in[2]; ++ix) {
                      const int64_t ox = ix * w.s[2] + kx * w.d[2] - w.pb[2];
                      if (ox >= 0 && ox < w.out[2]) arow[ox] += wv * static_cast<double>(xrow[ix]);
                    }
                  }
                }
              }
        }
        T* yc = py + job * out_vol;
        for (int64_t p = 0; p < out_vol; ++p) yc[p] = static_cast<T>(acc[static_cast<size_t>(p)]);
      }
    }
  });
}

}  // namespace fusor::ref
