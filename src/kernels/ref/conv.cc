// Reference Conv for 1 to 3 spatial dims. The output is computed in tiles of output positions:
// each tile gathers its input patches (im2col) into a thread-local buffer, then multiplies with
// the weights in i-k-j order with double accumulators. Tiles are sized to stay in cache.
#include <algorithm>
#include <array>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/window.h"

namespace fusor::ref {
void Conv(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const Tensor& wt = inputs[1];
  const Tensor* bias = inputs.size() > 2 && inputs[2].defined() ? &inputs[2] : nullptr;
  Tensor& y = outputs[0];
  Dims kernel(wt.dims().begin() + 2, wt.dims().end());
  Window w = window_of(node, x.dims(), y.dims(), kernel);
  int64_t batch = x.dim(0), c_in = x.dim(1), c_out = wt.dim(0);
  int64_t group = node.attr_int("group", 1);
  int64_t cg = c_in / group, mg = c_out / group;
  int64_t kvol = w.k[0] * w.k[1] * w.k[2];
  int64_t r_len = cg * kvol;
  int64_t in_vol = w.in[0] * w.in[1] * w.in[2];
  int64_t p_len = w.out[0] * w.out[1] * w.out[2];
  int64_t tile = std::clamp<int64_t>(32768 / std::max<int64_t>(r_len, 1), 16, 1024);
  int64_t n_tiles = (p_len + tile - 1) / tile;
  int64_t jobs = batch * group * n_tiles;

  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    const T* pw = wt.data<T>();
    const T* pbias = bias ? bias->data<T>() : nullptr;
    T* py = y.data<T>();
#pragma omp parallel
    {
      std::vector<T> col(static_cast<size_t>(r_len * tile));
      std::vector<double> acc(static_cast<size_t>(tile));
#pragma omp for schedule(dynamic)
      for (int64_t job = 0; job < jobs; ++job) {
        int64_t t = job % n_tiles, g = (job / n_tiles) % group, n = job / (n_tiles * group);
        int64_t p0 = t * tile, pn = std::min(tile, p_len - p0);
        // im2col for this tile: col[r][p - p0], r = (c, kz, ky, kx).
        for (int64_t c = 0; c < cg; ++c) {
          const T* xc = px + (n * c_in + g * cg + c) * in_vol;
          for (int64_t kz = 0; kz < w.k[0]; ++kz)
            for (int64_t ky = 0; ky < w.k[1]; ++ky)
              for (int64_t kx = 0; kx < w.k[2]; ++kx) {
                int64_t r = ((c * w.k[0] + kz) * w.k[1] + ky) * w.k[2] + kx;
                T* dst = col.data() + r * tile;
                for (int64_t q = 0; q < pn; ++q) {
                  int64_t p = p0 + q;
                  int64_t ox = p % w.out[2], oy = (p / w.out[2]) % w.out[1], oz = p / (w.out[2] * w.out[1]);
                  int64_t iz = oz * w.s[0] - w.pb[0] + kz * w.d[0];
                  int64_t iy = oy * w.s[1] - w.pb[1] + ky * w.d[1];
                  int64_t ix = ox * w.s[2] - w.pb[2] + kx * w.d[2];
                  bool inside = iz >= 0 && iz < w.in[0] && iy >= 0 && iy < w.in[1] && ix >= 0 && ix < w.in[2];
                  dst[q] = inside ? xc[(iz * w.in[1] + iy) * w.in[2] + ix] : T(0);
                }
              }
        }
        for (int64_t m = 0; m < mg; ++m) {
          int64_t oc = g * mg + m;
          const T* wrow = pw + oc * r_len;
          double* ac = acc.data();
          std::fill(ac, ac + pn, pbias ? static_cast<double>(pbias[oc]) : 0.0);
          for (int64_t r = 0; r < r_len; ++r) {
            double wv = static_cast<double>(wrow[r]);
            const T* crow = col.data() + r * tile;
            for (int64_t q = 0; q < pn; ++q) ac[q] += wv * static_cast<double>(crow[q]);
          }
          T* yrow = py + (n * c_out + oc) * p_len + p0;
          for (int64_t q = 0; q < pn; ++q) yrow[q] = static_cast<T>(ac[q]);
        }
      }
    }
  });
}

}  // namespace fusor::ref
