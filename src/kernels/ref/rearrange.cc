// Ops that rearrange elements without looking at them, each one strided copy (strided_copy.h)
// over a view of the output with more axes than it has: Tile (every output axis split into
// [repeat, extent], the repeat axis of stride 0), DepthToSpace and SpaceToDepth (the 6-D
// reshape-transpose-reshape of their definitions).
#include "ir/graph.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"
#include "kernels/ref/strided_copy.h"

namespace fusor::ref {
namespace {

const std::byte* bytes(const Tensor& t) { return static_cast<const std::byte*>(t.raw()); }
std::byte* bytes(Tensor& t) { return static_cast<std::byte*>(t.raw()); }

}  // namespace

void Tile(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const auto repeats = inputs[1].to_int64_vector();
  const auto strides = strides_of(in.dims());
  Dims view;
  std::vector<int64_t> view_strides;
  for (size_t d = 0; d < in.rank(); ++d) {
    view.insert(view.end(), {repeats[d], in.dims()[d]});
    view_strides.insert(view_strides.end(), {0, strides[d]});
  }
  strided_copy(bytes(in), view_strides, bytes(outputs[0]), view, dtype_size(in.dtype()));
}

// Output [N, C/b², H, b, W, b] (then merged to [N, C/b², H*b, W*b]); the input channel of
// (c, i, j) is (i*b + j)*C' + c in DCR order, c*b² + i*b + j in CRD order.
void DepthToSpace(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const int64_t b = node.attr_int("blocksize", 1);
  const int64_t c_out = in.dims()[1] / (b * b);
  const auto s = strides_of(in.dims());
  const bool crd = node.attr_string("mode", "DCR") == "CRD";
  const std::vector<int64_t> view_strides =
      crd ? std::vector<int64_t>{s[0], b * b * s[1], s[2], b * s[1], s[3], s[1]}
          : std::vector<int64_t>{s[0], s[1], s[2], b * c_out * s[1], s[3], c_out * s[1]};
  strided_copy(bytes(in), view_strides, bytes(outputs[0]), {in.dims()[0], c_out, in.dims()[2], b, in.dims()[3], b},
               dtype_size(in.dtype()));
}

// Output [N, b, b, C, H/b, W/b] (merged to [N, b²C, H/b, W/b]): element (i, j, c, h, w) reads
// input (c, h*b + i, w*b + j).
void SpaceToDepth(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& in = inputs[0];
  const int64_t b = node.attr_int("blocksize", 1);
  const auto s = strides_of(in.dims());
  strided_copy(bytes(in), {s[0], s[2], s[3], s[1], b * s[2], b * s[3]}, bytes(outputs[0]),
               {in.dims()[0], b, b, in.dims()[1], in.dims()[2] / b, in.dims()[3] / b}, dtype_size(in.dtype()));
}

}  // namespace fusor::ref
