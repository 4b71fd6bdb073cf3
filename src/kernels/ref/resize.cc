// Resize and Upsample, from one tap table per axis (kernels/ref/resize_taps.h), three ways:
// - every resized axis picks a single input element (nearest, nothing extrapolated): elements
//   are copied as bytes, for any dtype;
// - float32 resized on its last two axes only (images: YOLO's and U-Net's 2x): per plane, the
//   rows into a small buffer, then the columns from it, so both passes stay in cache and the
//   column pass vectorizes;
// - otherwise the axes one after another over the whole tensor, in float32 for float32 data
//   and float64 for the other numeric types, as ONNX's reference nests 1-D interpolations.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

#include "ir/graph.h"
#include "ir/resize_params.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/resize_taps.h"

namespace fusor::ref {
namespace {

template <size_t Size>
void gather_row(const std::byte* src, const int64_t* offsets, std::byte* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * Size, src + offsets[i] * static_cast<int64_t>(Size), Size);
}

// out[o_0, .., o_{r-1}] = in[map_0[o_0], .., map_{r-1}[o_{r-1}]], as bytes.
void gather_nearest(const Tensor& in, Tensor& out, const std::vector<std::vector<int64_t>>& maps) {
  const size_t rank = in.rank(), esize = dtype_size(in.dtype());
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  if (out.numel() == 0) return;
  if (rank == 0) return (void)std::memcpy(dst, src, esize);
  const auto strides = strides_of(in.dims());
  std::vector<std::vector<int64_t>> offs(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t i : maps[d]) offs[d].push_back(i * strides[d]);
  const int64_t row = out.dims().back(), rows = out.numel() / row;
  const int64_t* last = offs[rank - 1].data();
  std::vector<int64_t> idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r, dst += static_cast<size_t>(row) * esize) {
    int64_t base = 0;
    for (size_t d = 0; d + 1 < rank; ++d) base += offs[d][static_cast<size_t>(idx[d])];
    const std::byte* s = src + static_cast<size_t>(base) * esize;
    switch (esize) {
      case 1: gather_row<1>(s, last, dst, row); break;
      case 2: gather_row<2>(s, last, dst, row); break;
      case 4: gather_row<4>(s, last, dst, row); break;
      case 8: gather_row<8>(s, last, dst, row); break;
      default:
        for (int64_t i = 0; i < row; ++i) std::memcpy(dst + static_cast<size_t>(i) * esize, s + static_cast<size_t>(last[i]) * esize, esize);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < out.dims()[d]) break;
      idx[d] = 0;
    }
  }
}

// One axis of the separable interpolation: [outer, in, inner] -> [outer, out, inner].
template <class Acc>
void interpolate_axis(const std::vector<Acc>& src, std::vector<Acc>& dst, int64_t outer, int64_t in, int64_t inner,
                      int64_t out, const AxisTaps& t, Acc extrapolation) {
  dst.assign(static_cast<size_t>(outer * out * inner), Acc(0));
  std::vector<Acc> w(t.weight.begin(), t.weight.end());
  for (int64_t o = 0; o < outer; ++o) {
    const Acc* s = src.data() + o * in * inner;
    Acc* d = dst.data() + o * out * inner;
    for (int64_t x = 0; x < out; ++x, d += inner) {
      if (t.outside[static_cast<size_t>(x)]) {
        std::fill(d, d + inner, extrapolation);
        continue;
      }
      const int64_t* idx = t.index.data() + x * t.taps;
      const Acc* wx = w.data() + x * t.taps;
      if (inner == 1) {
        Acc sum = 0;
        for (int j = 0; j < t.taps; ++j) sum += wx[j] * s[idx[j]];
        *d = sum;
        continue;
      }
      for (int j = 0; j < t.taps; ++j) {
        if (wx[j] == 0) continue;
        const Acc* row = s + idx[j] * inner;
        for (int64_t i = 0; i < inner; ++i) d[i] += wx[j] * row[i];
      }
    }
  }
}

template <class T, class Acc>
void interpolate(const Tensor& in, Tensor& out, const std::vector<AxisTaps>& taps, const std::vector<size_t>& order,
                 double extrapolation) {
  const T* x = static_cast<const T*>(in.raw());
  std::vector<Acc> cur(x, x + in.numel()), next;
  Dims dims = in.dims();
  for (size_t a : order) {
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d) outer *= dims[d];
    for (size_t d = a + 1; d < dims.size(); ++d) inner *= dims[d];
    const int64_t out_len = out.dims()[a];
    interpolate_axis<Acc>(cur, next, outer, dims[a], inner, out_len, taps[a], static_cast<Acc>(extrapolation));
    dims[a] = out_len;
    cur.swap(next);
  }
  T* y = static_cast<T*>(out.raw());
  for (size_t i = 0; i < cur.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      y[i] = static_cast<T>(cur[i]);
    } else if constexpr (std::is_same_v<T, bool>) {
      y[i] = cur[i] != 0;
    } else {  // truncate like a numpy cast, saturating so that the conversion is defined
      const Acc v = std::trunc(cur[i]);
      if (std::isnan(v)) y[i] = 0;
      else if (v >= static_cast<Acc>(std::numeric_limits<T>::max())) y[i] = std::numeric_limits<T>::max();
      else if (v <= static_cast<Acc>(std::numeric_limits<T>::lowest())) y[i] = std::numeric_limits<T>::lowest();
      else y[i] = static_cast<T>(v);
    }
  }
}

// Float32 resized on axes rank-2 and rank-1 only: `planes` planes of [h, w] -> [oh, ow].
void resize_planes(const float* in, float* out, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                   const AxisTaps& ty, const AxisTaps& tx) {
  const std::vector<float> wx(tx.weight.begin(), tx.weight.end()), wy(ty.weight.begin(), ty.weight.end());
  std::vector<float> rows(static_cast<size_t>(h * ow));
  for (int64_t p = 0; p < planes; ++p, in += h * w, out += oh * ow) {
    for (int64_t r = 0; r < h; ++r) {
      const float* s = in + r * w;
      float* d = rows.data() + r * ow;
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t* ix = tx.index.data() + x * tx.taps;
        const float* wt = wx.data() + x * tx.taps;
        float sum = 0;
        for (int t = 0; t < tx.taps; ++t) sum += wt[t] * s[ix[t]];
        d[x] = sum;
      }
    }
    for (int64_t y = 0; y < oh; ++y) {
      float* d = out + y * ow;
      std::fill(d, d + ow, 0.0f);
      for (int t = 0; t < ty.taps; ++t) {
        const float wt = wy[static_cast<size_t>(y * ty.taps + t)];
        if (wt == 0) continue;
        const float* s = rows.data() + ty.index[static_cast<size_t>(y * ty.taps + t)] * ow;
        for (int64_t x = 0; x < ow; ++x) d[x] += wt * s[x];
      }
    }
  }
}

std::vector<double> doubles(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.scalar_as_double(i));
  return v;
}

bool given(std::span<const Tensor> inputs, int i) {
  return i >= 0 && static_cast<size_t>(i) < inputs.size() && inputs[static_cast<size_t>(i)].defined() &&
         inputs[static_cast<size_t>(i)].numel() > 0;
}

// Per input axis: roi start and end (tf_crop_and_resize only), as fractions of the axis.
std::vector<std::pair<double, double>> roi_of(const Node& node, std::span<const Tensor> inputs, int at, size_t rank) {
  std::vector<std::pair<double, double>> roi(rank, {0.0, 1.0});
  if (!given(inputs, at)) fail(node, "coordinate_transformation_mode tf_crop_and_resize needs roi");
  const std::vector<double> v = doubles(inputs[static_cast<size_t>(at)]);
  std::vector<size_t> axes;
  if (node.opset >= 18 && node.has_attr("axes"))
    for (int64_t a : node.attr_ints("axes")) axes.push_back(static_cast<size_t>(normalize_axis(a, static_cast<int64_t>(rank), node)));
  else
    for (size_t a = 0; a < rank; ++a) axes.push_back(a);
  if (v.size() != 2 * axes.size())
    fail(node, "roi has " + std::to_string(v.size()) + " values for " + std::to_string(axes.size()) + " axes");
  for (size_t i = 0; i < axes.size(); ++i) roi[axes[i]] = {v[i], v[axes.size() + i]};
  return roi;
}

void resize(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  Tensor& out = outputs[0];
  const ResizeInputs where = resize_inputs(node);
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (where.scales < 0) {
    for (float s : node.attr_floats("scales")) scales.push_back(s);
  } else if (given(inputs, where.scales)) {
    scales = doubles(inputs[static_cast<size_t>(where.scales)]);
  }
  if (given(inputs, where.sizes)) sizes = inputs[static_cast<size_t>(where.sizes)].to_int64_vector();
  const ResizeSpec spec = resolve_resize(node, in.dims(), scales, sizes);
  if (spec.out_dims != out.dims())
    fail(node, "output " + dims_to_string(out.dims()) + " does not match the resized shape " + dims_to_string(spec.out_dims));
  const size_t rank = in.rank();
  std::vector<std::pair<double, double>> roi(rank, {0.0, 1.0});
  if (spec.coord == ResizeCoord::TfCropAndResize) roi = roi_of(node, inputs, where.roi, rank);

  std::vector<AxisTaps> taps(rank);
  std::vector<size_t> order;  // the axes that change anything, shrinking ones first
  bool single = true;
  for (size_t a = 0; a < rank; ++a) {
    const int64_t len = in.dims()[a], out_len = spec.out_dims[a];
    if (len == 0 || out_len == 0) continue;
    taps[a] = axis_taps(spec, len, out_len, spec.scales[a], roi[a].first, roi[a].second);
    if (is_identity(taps[a], len, out_len)) continue;
    order.push_back(a);
    single = single && spec.mode == ResizeMode::Nearest && !taps[a].any_outside;
  }
  if (out.numel() == 0) return;
  if (single) {
    std::vector<std::vector<int64_t>> maps(rank);
    for (size_t a = 0; a < rank; ++a) {
      maps[a].resize(static_cast<size_t>(spec.out_dims[a]));
      if (std::find(order.begin(), order.end(), a) == order.end()) std::iota(maps[a].begin(), maps[a].end(), 0);
      else maps[a] = single_taps(taps[a], spec.out_dims[a]);
    }
    return gather_nearest(in, out, maps);
  }
  const bool planar = in.dtype() == DType::Float32 && rank >= 2 &&
                     std::all_of(order.begin(), order.end(), [&](size_t a) { return a + 2 >= rank && !taps[a].any_outside; });
  if (planar) {
    const int64_t h = in.dims()[rank - 2], w = in.dims()[rank - 1];
    return resize_planes(in.data<float>(), out.data<float>(), in.numel() / (h * w), h, w, spec.out_dims[rank - 2],
                         spec.out_dims[rank - 1], taps[rank - 2], taps[rank - 1]);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return static_cast<double>(spec.out_dims[a]) / static_cast<double>(in.dims()[a]) <
           static_cast<double>(spec.out_dims[b]) / static_cast<double>(in.dims()[b]);
  });
  visit_dtype(in.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    if constexpr (std::is_same_v<T, float>) interpolate<T, float>(in, out, taps, order, spec.extrapolation_value);
    else interpolate<T, double>(in, out, taps, order, spec.extrapolation_value);
  });
}

}  // namespace

void Resize(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  resize(node, inputs, outputs);
}
void Upsample(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  resize(node, inputs, outputs);
}

}  // namespace fusor::ref
