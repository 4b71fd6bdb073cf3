// Slice with its starts, ends, axes and steps known at plan time (how exports cut halves of a head
// for rotary embeddings, or a window of positions): the ranges are resolved once, so a run is a
// strided copy, one memcpy per output row when the innermost axis is taken with step 1. It keeps
// the reference's semantics (ir/layout_params.h resolves both) and allocates nothing per run.
#include <array>
#include <cstring>

#include "ir/layout_params.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

constexpr size_t kMaxRank = 12;

class SliceKernel final : public Kernel {
 public:
  SliceKernel(const SliceSpec& spec, const Dims& in, size_t element_bytes) : rank_(in.size()), es_(element_bytes) {
    int64_t stride = 1;
    for (size_t k = rank_; k-- > 0;) {
      out_[k] = spec.out_dims[k];
      step_[k] = spec.step[k] * stride;  // input elements per output step along k
      base_ += spec.start[k] * stride;
      stride *= in[k];
    }
    rows_ = 1;
    for (size_t k = 0; k + 1 < rank_; ++k) rows_ *= out_[k];
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const auto* x = static_cast<const std::byte*>(in[0].raw());
    auto* y = static_cast<std::byte*>(out[0].raw());
    if (out[0].numel() == 0) return;
    const int64_t len = out_[rank_ - 1], inner = step_[rank_ - 1];
    std::array<int64_t, kMaxRank> idx{};
    int64_t off = base_;
    for (int64_t row = 0; row < rows_; ++row) {
      std::byte* dst = y + static_cast<size_t>(row * len) * es_;
      if (inner == 1) {
        std::memcpy(dst, x + static_cast<size_t>(off) * es_, static_cast<size_t>(len) * es_);
      } else {
        for (int64_t j = 0; j < len; ++j) std::memcpy(dst + static_cast<size_t>(j) * es_, x + static_cast<size_t>(off + j * inner) * es_, es_);
      }
      for (size_t k = rank_ - 1; k-- > 0;) {  // the next row: an odometer over the outer axes
        off += step_[k];
        if (++idx[k] < out_[k]) break;
        off -= step_[k] * out_[k];
        idx[k] = 0;
      }
    }
  }
  std::string name() const override { return "slice_strided_x" + std::to_string(es_ * 8); }

 private:
  size_t rank_, es_;
  std::array<int64_t, kMaxRank> out_{}, step_{};
  int64_t base_ = 0, rows_ = 1;
};

}  // namespace

// Opset 10+: starts, ends (and axes, steps when given) must be plan-time constants; opset 1-9
// reads them from attributes. Declines anything else (the reference kernel runs it).
std::unique_ptr<Kernel> make_slice_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (n.op != Op::Slice || r.inputs.empty() || used_outputs(r) != 1) return nullptr;
  const Dims& in = r.inputs[0].dims;
  if (in.empty() || in.size() > kMaxRank) return nullptr;
  if (n.opset >= 10) {  // every given argument must be known at plan time
    if (r.inputs.size() < 3) return nullptr;
    for (size_t i = 1; i < r.inputs.size(); ++i)
      if (r.inputs[i].dtype != DType::Undefined && !(i < r.constants.size() && r.constants[i])) return nullptr;
  }
  const SliceSpec spec = resolve_slice_node(n, in, [&](size_t i) { return i < r.constants.size() ? r.constants[i] : nullptr; });
  if (spec.out_dims != r.outputs[0].dims) return nullptr;
  return std::make_unique<SliceKernel>(spec, in, dtype_size(r.inputs[0].dtype));
}

}  // namespace fusor::cpu
