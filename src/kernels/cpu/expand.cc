// Expand: the input broadcast to the output's shape as whole-block copies. The trailing dims
// that the input already has in full form one contiguous block (grouped-query attention's
// repeat of each kv head: [b, kv, 1, s, d] -> [b, kv, g, s, d], blocks of s * d); every output
// block copies the input block its index maps to (broadcast dims repeat it). The reference
// broadcast loop went element by element (1.3% of llama-tiny at batch 8). Blocks under 64 bytes
// (a broadcast innermost dim) stay with the reference. Any dtype: bytes are copied.
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

class ExpandKernel final : public Kernel {
 public:
  // `in` is the input's dims left-padded with 1s to the output's rank.
  ExpandKernel(const Dims& in, const Dims& out, size_t element_bytes) {
    size_t first = out.size();  // the block: dims [first, rank) equal on both sides
    while (first > 0 && in[first - 1] == out[first - 1]) --first;
    block_ = element_bytes;
    for (size_t d = first; d < out.size(); ++d) block_ *= static_cast<size_t>(out[d]);
    outer_dims_.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(first));
    // The input's stride, in blocks, along each outer dim (0 where it is broadcast).
    in_strides_.assign(first, 0);
    int64_t stride = 1;
    for (size_t d = first; d-- > 0;) {
      in_strides_[d] = in[d] == 1 ? 0 : stride;
      stride *= in[d];
    }
    outer_ = 1;
    for (int64_t v : outer_dims_) outer_ *= v;
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const auto* x = static_cast<const std::byte*>(in[0].raw());
    auto* y = static_cast<std::byte*>(out[0].raw());
    const int64_t bytes = outer_ * static_cast<int64_t>(block_);
    parallel_range(outer_, bytes / 4, 1, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o) {
        int64_t rest = o, from = 0;
        for (size_t d = outer_dims_.size(); d-- > 0;) {
          from += rest % outer_dims_[d] * in_strides_[d];
          rest /= outer_dims_[d];
        }
        std::memcpy(y + static_cast<size_t>(o) * block_, x + static_cast<size_t>(from) * block_, block_);
      }
    });
  }
  std::string name() const override { return "expand_blocks"; }
  size_t block_bytes() const { return block_; }

 private:
  size_t block_ = 0;
  Dims outer_dims_;
  std::vector<int64_t> in_strides_;
  int64_t outer_ = 1;
};

}  // namespace

std::unique_ptr<Kernel> make_expand_kernel(const KernelRequest& r) {
  if (r.node.op != Op::Expand || r.inputs.empty() || used_outputs(r) != 1) return nullptr;
  const Dims& out = r.outputs[0].dims;
  Dims in = r.inputs[0].dims;
  if (in.size() > out.size() || r.outputs[0].dtype != r.inputs[0].dtype) return nullptr;
  in.insert(in.begin(), out.size() - in.size(), 1);
  for (size_t d = 0; d < out.size(); ++d)
    if (in[d] != out[d] && in[d] != 1) return nullptr;
  auto kernel = std::make_unique<ExpandKernel>(in, out, dtype_size(r.inputs[0].dtype));
  // Blocks of a few bytes (a broadcast innermost dim) copy faster element-wise: leave those to
  // the reference rather than call memcpy per element.
  if (kernel->block_bytes() < 64) return nullptr;
  return kernel;
}

}  // namespace fusor::cpu
