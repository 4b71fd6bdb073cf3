// Reference RoiAlign: each output bin of a region averages (or takes the max of) a grid of
// bilinear samples. As in ONNX's reference, "max" takes the largest weighted corner of each
// sample, and samples more than one pixel outside the feature map count as zero.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/sampling_params.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

// One bilinear sample: four corner offsets in a [H, W] plane and their weights.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  Sample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= height - 1) y = static_cast<double>(y0 = y1 = height - 1);
  if (x0 >= width - 1) x = static_cast<double>(x0 = x1 = width - 1);
  const double ly = y - static_cast<double>(y0), lx = x - static_cast<double>(x0), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * width + x0;
  s.pos[1] = y0 * width + x1;
  s.pos[2] = y1 * width + x0;
  s.pos[3] = y1 * width + x1;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

}  // namespace

void RoiAlign(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const RoiAlignParams p = roi_align_params(node);
  const Tensor &x = inputs[0], &rois = inputs[1];
  Tensor& y = outputs[0];
  const int64_t batch = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
  const int64_t n_rois = rois.dim(0), oh = p.output_height, ow = p.output_width;
  const std::vector<int64_t> batch_index = inputs[2].to_int64_vector();
  for (int64_t b : batch_index)
    if (b < 0 || b >= batch)
      fail(node, "batch index " + std::to_string(b) + " is out of range for " + std::to_string(batch) + " images",
           ErrorKind::InvalidArgument);
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* src = x.data<T>();
    const T* box = rois.data<T>();
    T* dst = y.data<T>();
    for (int64_t r = 0; r < n_rois; ++r) {
      // Region geometry in the element type, as ONNX Runtime computes it: the adaptive sample
      // count ceil(roi / bins) depends on that rounding when a region is a whole number of bins.
      const T offset = p.half_pixel ? T(0.5) : T(0), scale = static_cast<T>(p.spatial_scale);
      const T x0 = box[r * 4 + 0] * scale - offset, y0 = box[r * 4 + 1] * scale - offset;
      T roi_w = box[r * 4 + 2] * scale - offset - x0, roi_h = box[r * 4 + 3] * scale - offset - y0;
      if (!p.half_pixel) {  // malformed regions become 1x1
        roi_w = std::max(roi_w, T(1));
        roi_h = std::max(roi_h, T(1));
      }
      const T bin_ht = roi_h / static_cast<T>(oh), bin_wt = roi_w / static_cast<T>(ow);
      const double bin_h = bin_ht, bin_w = bin_wt;
      const double grid_hd = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(bin_ht);
      const double grid_wd = p.sampling_ratio > 0 ? static_cast<double>(p.sampling_ratio) : std::ceil(bin_wt);
      if (!(grid_hd * grid_wd * static_cast<double>(oh * ow) <= 1e8) || !std::isfinite(x0) || !std::isfinite(y0) ||
          !std::isfinite(roi_w) || !std::isfinite(roi_h))
        fail(node, "region " + std::to_string(r) + " is too large or not finite", ErrorKind::InvalidArgument);
      const auto grid_h = static_cast<int64_t>(std::max(grid_hd, 0.0)), grid_w = static_cast<int64_t>(std::max(grid_wd, 0.0));
      const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
      // Samples are shared by every channel of the region.
      std::vector<Sample> samples;
      for (int64_t ph = 0; ph < oh; ++ph)
        for (int64_t pw = 0; pw < ow; ++pw)
          for (int64_t iy = 0; iy < grid_h; ++iy)
            for (int64_t ix = 0; ix < grid_w; ++ix)
              samples.push_back(bilinear_sample(
                  y0 + static_cast<double>(ph) * bin_h + (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h),
                  x0 + static_cast<double>(pw) * bin_w + (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w),
                  height, width));
      const int64_t per_bin = grid_h * grid_w;
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = src + (batch_index[static_cast<size_t>(r)] * channels + c) * height * width;
        for (int64_t bin = 0; bin < oh * ow; ++bin) {
          double acc = 0;
          for (int64_t s = 0; s < per_bin; ++s) {
            const Sample& sm = samples[static_cast<size_t>(bin * per_bin + s)];
            double v[4];
            for (int q = 0; q < 4; ++q) v[q] = sm.w[q] * static_cast<double>(plane[sm.pos[q]]);
            if (p.max) {
              double m = std::max({v[0], v[1], v[2], v[3]});
              acc = s == 0 ? m : std::max(acc, m);
            } else {
              acc += v[0] + v[1] + v[2] + v[3];
            }
          }
          dst[(r * channels + c) * oh * ow + bin] = static_cast<T>(p.max ? acc : acc / count);
        }
      }
    }
  });
}

}  // namespace fusor::ref
