// Pad and CenterCropPad: the input placed at an offset inside the output (ir/pad_params.h), the
// border filled with a constant or read back from the input (edge, reflect, wrap). Dtype-generic:
// elements move as bytes.
#include <algorithm>
#include <cstring>

#include "ir/graph.h"
#include "ir/pad_params.h"
#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

// The input index that output index `o` reads along an axis of length `len`, or -1 for the fill.
// Negative pads crop first, and the other modes read the cropped input, as ONNX Runtime does:
// wrap with pads (-1, 2) over [0..5] gives [1..5, 1, 2], not [1..5, 0, 1].
int64_t source_index(int64_t o, int64_t begin, int64_t len, int64_t out_len, PadMode mode) {
  const int64_t i = o - begin;
  const int64_t lo = std::max<int64_t>(0, -begin), hi = len - std::max<int64_t>(0, -(out_len - len - begin));
  if (i >= lo && i < hi) return i;
  const int64_t kept = hi - lo, j = i - lo;  // the index within the cropped input
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return lo + std::clamp<int64_t>(j, 0, kept - 1);
    case PadMode::Wrap: return lo + ((j % kept) + kept) % kept;
    case PadMode::Reflect: {
      if (kept == 1) return lo;
      const int64_t period = 2 * (kept - 1);
      const int64_t r = ((j % period) + period) % period;
      return lo + (r < kept ? r : period - r);
    }
  }
  return -1;
}

void place(const Tensor& in, Tensor& out, const PadSpec& spec, const std::byte* fill) {
  const size_t esize = dtype_size(in.dtype());
  const auto* src = static_cast<const std::byte*>(in.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  if (out.numel() == 0) return;
  const size_t rank = in.rank();
  if (rank == 0) return (void)std::memcpy(dst, src, esize);
  // Per axis, the source index of every output index, pre-multiplied by the input stride.
  const auto strides = strides_of(in.dims());
  std::vector<std::vector<int64_t>> map(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t o = 0; o < spec.out_dims[d]; ++o) {
      const int64_t i = source_index(o, spec.begin[d], in.dims()[d], spec.out_dims[d], spec.mode);
      map[d].push_back(i < 0 ? -1 : i * strides[d]);
    }
  const int64_t row = spec.out_dims.back();
  const int64_t rows = out.numel() / row;
  std::vector<int64_t> idx(rank - 1, 0);
  for (int64_t r = 0; r < rows; ++r, dst += static_cast<size_t>(row) * esize) {
    int64_t base = 0;  // input offset of the row, or -1 when the row lies in the fill
    for (size_t d = 0; d + 1 < rank && base >= 0; ++d) {
      const int64_t m = map[d][static_cast<size_t>(idx[d])];
      base = m < 0 ? -1 : base + m;
    }
    for (int64_t o = 0; o < row; ++o) {
      const int64_t m = base < 0 ? -1 : map[rank - 1][static_cast<size_t>(o)];
      std::memcpy(dst + static_cast<size_t>(o) * esize, m < 0 ? fill : src + static_cast<size_t>(base + m) * esize,
                  esize);
    }
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < spec.out_dims[d]) break;
      idx[d] = 0;
    }
  }
}

std::vector<int64_t> ints_or_empty(std::span<const Tensor> inputs, size_t i) {
  return i < inputs.size() && inputs[i].defined() ? inputs[i].to_int64_vector() : std::vector<int64_t>{};
}

}  // namespace

void Pad(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  std::vector<int64_t> pads, axes;
  std::vector<std::byte> fill(dtype_size(in.dtype()), std::byte{0});
  if (node.opset < 11) {
    pads = node.attr_ints(node.opset < 2 ? "paddings" : "pads");
    if (const double value = node.attr_float("value", 0.0f); value != 0)
      visit_dtype(in.dtype(), node, [&](auto* tag) {
        const auto v = static_cast<elem_t<decltype(tag)>>(value);
        std::memcpy(fill.data(), &v, sizeof v);
      });
  } else {
    pads = ints_or_empty(inputs, 1);
    if (inputs.size() > 2 && inputs[2].defined() && inputs[2].numel() == 1)
      std::memcpy(fill.data(), inputs[2].raw(), fill.size());
    if (node.opset >= 18) axes = ints_or_empty(inputs, 3);
  }
  place(in, outputs[0], resolve_pad(node, in.dims(), pads, axes), fill.data());
}

void CenterCropPad(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const std::vector<std::byte> zero(dtype_size(in.dtype()), std::byte{0});
  const PadSpec spec = resolve_center_crop_pad(node, in.dims(), inputs[1].to_int64_vector(), node.attr_ints("axes"));
  place(in, outputs[0], spec, zero.data());
}

}  // namespace fusor::ref
