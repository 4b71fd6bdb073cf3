// Reference DeformConv (2-D): a convolution whose every kernel tap samples X at its regular
// position plus a learned offset, bilinearly (taps outside X read zero), scaled by an optional
// mask. Per image and group, the sampled taps are gathered into columns (as Conv's im2col),
// then each output channel is a dot product with its weights, accumulated in double.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

template <class T>
double bilinear(const T* plane, int64_t h, int64_t w, double y, double x) {
  if (std::isnan(y) || std::isnan(x)) return std::numeric_limits<double>::quiet_NaN();
  // Wholly outside (this also keeps huge or infinite offsets away from the integer casts).
  if (y <= -1 || x <= -1 || y >= static_cast<double>(h) || x >= static_cast<double>(w)) return 0.0;
  const double fy = std::floor(y), fx = std::floor(x);
  const int64_t y0 = static_cast<int64_t>(fy), x0 = static_cast<int64_t>(fx);
  const double ly = y - fy, lx = x - fx;
  auto at = [&](int64_t yy, int64_t xx) {
    return yy >= 0 && yy < h && xx >= 0 && xx < w ? static_cast<double>(plane[yy * w + xx]) : 0.0;
  };
  return (1 - ly) * ((1 - lx) * at(y0, x0) + lx * at(y0, x0 + 1)) +
         ly * ((1 - lx) * at(y0 + 1, x0) + lx * at(y0 + 1, x0 + 1));
}

}  // namespace

void DeformConv(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const Tensor& wt = inputs[1];
  const Tensor& offset = inputs[2];
  const Tensor* bias = inputs.size() > 3 && inputs[3].defined() ? &inputs[3] : nullptr;
  const Tensor* mask = inputs.size() > 4 && inputs[4].defined() ? &inputs[4] : nullptr;
  Tensor& y = outputs[0];
  const int64_t batch = x.dim(0), c_in = x.dim(1), ih = x.dim(2), iw = x.dim(3);
  const int64_t c_out = y.dim(1), oh = y.dim(2), ow = y.dim(3);
  const int64_t kh = wt.dim(2), kw = wt.dim(3), taps = kh * kw, plane = oh * ow;
  const int64_t group = node.attr_int("group", 1), offset_groups = node.attr_int("offset_group", 1);
  const int64_t cg = c_in / group, mg = c_out / group, c_per_offset = c_in / offset_groups;
  const auto strides = node.attr_ints("strides", {1, 1}), dil = node.attr_ints("dilations", {1, 1});
  const auto pads = node.attr_ints("pads", {0, 0, 0, 0});
  const int64_t rows = cg * taps;

  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    const T* pw = wt.data<T>();
    const T* poff = offset.data<T>();
    const T* pmask = mask ? mask->data<T>() : nullptr;
    T* py = y.data<T>();
#pragma omp parallel for
    for (int64_t job = 0; job < batch * group; ++job) {
      const int64_t n = job / group, g = job % group;
      std::vector<double> col(static_cast<size_t>(rows * plane));
      for (int64_t c = 0; c < cg; ++c) {
        const int64_t ci = g * cg + c, og = ci / c_per_offset;
        const T* xc = px + (n * c_in + ci) * ih * iw;
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t ky = t / kw, kx = t % kw;
          // offset is [N, offset_group * taps * 2 (dy, dx), oh, ow]; mask [N, offset_group * taps, oh, ow].
          const T* dy = poff + ((n * offset_groups + og) * taps * 2 + t * 2) * plane;
          const T* dx = dy + plane;
          const T* m = pmask ? pmask + ((n * offset_groups + og) * taps + t) * plane : nullptr;
          double* dst = col.data() + (c * taps + t) * plane;
          for (int64_t p = 0; p < plane; ++p) {
            const int64_t oy = p / ow, ox = p % ow;
            const double sy = static_cast<double>(oy * strides[0] - pads[0] + ky * dil[0]) + static_cast<double>(dy[p]);
            const double sx = static_cast<double>(ox * strides[1] - pads[1] + kx * dil[1]) + static_cast<double>(dx[p]);
            const double v = bilinear(xc, ih, iw, sy, sx);
            dst[p] = m ? v * static_cast<double>(m[p]) : v;
          }
        }
      }
      std::vector<double> acc(static_cast<size_t>(plane));
      for (int64_t mo = 0; mo < mg; ++mo) {
        const int64_t oc = g * mg + mo;
        std::fill(acc.begin(), acc.end(), bias ? static_cast<double>(bias->data<T>()[oc]) : 0.0);
        const T* wrow = pw + oc * rows;
        for (int64_t r = 0; r < rows; ++r) {
          const double wv = static_cast<double>(wrow[r]);
          const double* crow = col.data() + r * plane;
          for (int64_t p = 0; p < plane; ++p) acc[static_cast<size_t>(p)] += wv * crow[p];
        }
        T* yc = py + (n * c_out + oc) * plane;
        for (int64_t p = 0; p < plane; ++p) yc[p] = static_cast<T>(acc[static_cast<size_t>(p)]);
      }
    }
  });
}

}  // namespace fusor::ref
