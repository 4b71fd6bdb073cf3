// Resize (and Upsample) in nearest mode with plan-time scales or sizes (YOLO's 2x upsampling):
// every output element copies one input element, chosen per axis by the reference's own tap
// tables (kernels/ref/resize_taps.h), so each coordinate_transformation_mode and nearest_mode
// gives exactly the reference's result. The tables become byte offsets once, at plan time; a run
// gathers each output row along the last axis and copies a row whose source row is the one just
// written (a 2x upsample's every second row) instead of gathering it again. Output rows are split
// over the thread pool. Any dtype, as bytes. It follows a dense layout (channels-last) the same
// way, over the dims in storage order, so YOLO's upsampling of a channels-last convolution's
// output needs no reorders.
#include <array>
#include <cstring>
#include <vector>

#include "ir/resize_params.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/factories.h"
#include "kernels/ref/resize_taps.h"

namespace fusor::cpu {
namespace {

constexpr size_t kMaxRank = 12;

template <class T>
void gather_row(const std::byte* src, const int64_t* index, std::byte* dst, int64_t n) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t i = 0; i < n; ++i) d[i] = s[index[i]];
}

class ResizeNearestKernel final : public FollowsDenseLayout {
 public:
  // maps[a][o]: the input index along axis a of output position o.
  ResizeNearestKernel(std::vector<std::vector<int64_t>> maps, Dims in, Dims out, size_t element_bytes)
      : maps_(std::move(maps)), in_(std::move(in)), plain_out_(std::move(out)), es_(element_bytes) {
    arrange(maps_, in_, plain_out_);
  }

  bool follows_layout(const std::string& layout) const override {
    const auto order = dense_layout_order(layout);
    return order && order->size() == in_.size();
  }
  bool follows_input(size_t index) const override { return index == 0; }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    if (!output_blocked) return;
    order_ = *dense_layout_order(inputs[0]);
    std::vector<std::vector<int64_t>> maps;
    for (int a : order_) maps.push_back(maps_[static_cast<size_t>(a)]);
    arrange(maps, dims_in_order(in_, order_), dims_in_order(plain_out_, order_));
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const int64_t row = out_.back();
    if (out[0].numel() == 0) return;
    const int64_t rows = out[0].numel() / row;
    const auto* x = static_cast<const std::byte*>(in[0].raw());
    auto* y = static_cast<std::byte*>(out[0].raw());
    const size_t row_bytes = static_cast<size_t>(row) * es_;
    const size_t outer_rank = out_.size() - 1;
    parallel_range(rows, out[0].numel(), 1, [&](int64_t begin, int64_t end) {
      std::array<int64_t, kMaxRank> idx{};  // run() allocates nothing
      int64_t rest = begin;
      for (size_t d = outer_rank; d-- > 0;) {
        idx[d] = rest % out_[d];
        rest /= out_[d];
      }
      int64_t previous = -1;  // input offset of the row written just before, in this chunk
      for (int64_t r = begin; r < end; ++r) {
        int64_t base = 0;
        for (size_t d = 0; d < outer_rank; ++d) base += offsets_[d][static_cast<size_t>(idx[d])];
        std::byte* dst = y + static_cast<size_t>(r) * row_bytes;
        if (base == previous) std::memcpy(dst, dst - row_bytes, row_bytes);
        else gather(x + static_cast<size_t>(base) * es_, dst, row);
        previous = base;
        for (size_t d = outer_rank; d-- > 0;) {
          if (++idx[d] < out_[d]) break;
          idx[d] = 0;
        }
      }
    });
  }
  std::string name() const override { return "resize_nearest_x" + std::to_string(es_ * 8); }

 private:
  // Input element offsets per axis of `in` (dims in storage order) for `maps` in that order.
  void arrange(const std::vector<std::vector<int64_t>>& maps, const Dims& in, const Dims& out) {
    out_ = out;
    offsets_ = maps;
    int64_t stride = 1;
    for (size_t a = in.size(); a-- > 0;) {
      for (int64_t& o : offsets_[a]) o *= stride;
      stride *= in[a];
    }
  }

  void gather(const std::byte* src, std::byte* dst, int64_t n) const {
    const int64_t* index = offsets_.back().data();
    switch (es_) {
      case 1: return gather_row<uint8_t>(src, index, dst, n);
      case 2: return gather_row<uint16_t>(src, index, dst, n);
      case 4: return gather_row<uint32_t>(src, index, dst, n);
      case 8: return gather_row<uint64_t>(src, index, dst, n);
      default:
        for (int64_t i = 0; i < n; ++i) std::memcpy(dst + static_cast<size_t>(i) * es_, src + static_cast<size_t>(index[i]) * es_, es_);
    }
  }

  std::vector<std::vector<int64_t>> maps_;     // per input axis, as the node has them
  Dims in_, plain_out_;
  std::vector<std::vector<int64_t>> offsets_;  // per stored axis: input element offsets
  Dims out_;                                   // output dims in storage order
  size_t es_;
};

}  // namespace

// Declines linear and cubic modes, tf_crop_and_resize (its roi and extrapolation), and scales or
// sizes that are not plan-time constants (the reference kernel runs those).
std::unique_ptr<Kernel> make_resize_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if ((n.op != Op::Resize && n.op != Op::Upsample) || r.inputs.empty() || used_outputs(r) != 1) return nullptr;
  const Dims& in = r.inputs[0].dims;
  if (in.empty() || in.size() > kMaxRank || r.inputs[0].dtype == DType::Undefined) return nullptr;
  if (n.op == Op::Upsample && n.opset < 7) return nullptr;  // the reference reports it
  const ResizeInputs where = resize_inputs(n);
  auto given = [&](int i) { return i >= 0 && has_input(r, static_cast<size_t>(i)); };
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (where.scales < 0) {
    for (float s : n.attr_floats("scales")) scales.push_back(s);
  } else if (given(where.scales)) {
    const Tensor* t = constant_input(r, static_cast<size_t>(where.scales));
    if (t == nullptr) return nullptr;
    for (int64_t i = 0; i < t->numel(); ++i) scales.push_back(t->scalar_as_double(i));
  }
  if (given(where.sizes)) {
    const Tensor* t = constant_input(r, static_cast<size_t>(where.sizes));
    if (t == nullptr) return nullptr;
    sizes = t->to_int64_vector();
  }
  const ResizeSpec spec = resolve_resize(n, in, scales, sizes);
  if (spec.mode != ResizeMode::Nearest || spec.coord == ResizeCoord::TfCropAndResize || spec.out_dims != r.outputs[0].dims)
    return nullptr;
  std::vector<std::vector<int64_t>> maps(in.size());
  for (size_t a = 0; a < in.size(); ++a) {
    if (in[a] == 0 || spec.out_dims[a] == 0) continue;
    const ref::AxisTaps taps = ref::axis_taps(spec, in[a], spec.out_dims[a], spec.scales[a], 0.0, 1.0);
    if (taps.any_outside) return nullptr;
    maps[a] = ref::single_taps(taps, spec.out_dims[a]);
  }
  return std::make_unique<ResizeNearestKernel>(std::move(maps), in, spec.out_dims, dtype_size(r.inputs[0].dtype));
}

}  // namespace fusor::cpu
