// ScatterND without a reduction: the output is a copy of the data with each update slice written
// where its index tuple points. transformers' decoder exports build their causal mask with one
// ([batch, 1, 512, 512] data, one index tuple per element): the reference kernel, which gathers
// every index into a vector and writes each one-element slice through a std::function, took 7%
// of llama-tiny at batch 8. Here the data is copied in parallel chunks and the updates are
// written after every index has been checked (a bad one leaves no half-written output). Small
// scatters write in index order, as the reference does; from kParallelTuples tuples on, the
// threads split them, and duplicate indices (whose result ONNX leaves undefined without a
// reduction, and ONNX Runtime splits too) may end either way. Any dtype; int64 indices.
#include <algorithm>
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/ref/index_wrap.h"

namespace fusor::cpu {
namespace {

constexpr int64_t kParallelTuples = 65536;

class ScatterNdKernel final : public Kernel {
 public:
  ScatterNdKernel(const Node& node, const Dims& data, int64_t k, size_t element_bytes)
      : node_(node), dims_(data.begin(), data.begin() + k), k_(k) {
    slice_bytes_ = element_bytes;
    for (size_t d = static_cast<size_t>(k); d < data.size(); ++d) slice_bytes_ *= static_cast<size_t>(data[d]);
    strides_.assign(static_cast<size_t>(k), 0);
    size_t stride = slice_bytes_;
    for (int64_t d = k; d-- > 0;) {
      strides_[static_cast<size_t>(d)] = stride;
      stride *= static_cast<size_t>(data[static_cast<size_t>(d)]);
    }
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const auto* idx = in[1].data<int64_t>();
    const int64_t tuples = in[1].numel() / k_;
    // Byte offset of tuple n's slice; an index out of range is the reference's one-line error.
    auto offset = [&](int64_t n) {
      size_t at = 0;
      for (int64_t j = 0; j < k_; ++j)
        at += static_cast<size_t>(ref::wrap_index(node_, idx[n * k_ + j], dims_[static_cast<size_t>(j)], static_cast<size_t>(j))) *
              strides_[static_cast<size_t>(j)];
      return at;
    };
    // Tuples per task: a mask's 131072 of them go to both threads; small scatters stay in order.
    const int64_t grain = tuples >= kParallelTuples ? 4096 : std::max<int64_t>(tuples, 1);
    parallel_range(tuples, tuples * k_, grain, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) offset(n);
    });
    const auto* data = static_cast<const std::byte*>(in[0].raw());
    auto* y = static_cast<std::byte*>(out[0].raw());
    const auto bytes = static_cast<int64_t>(in[0].nbytes());
    constexpr int64_t kChunk = 256 * 1024;
    parallel_range((bytes + kChunk - 1) / kChunk, bytes / 4, 1, [&](int64_t begin, int64_t end) {
      const int64_t from = begin * kChunk, to = std::min(bytes, end * kChunk);
      std::memcpy(y + from, data + from, static_cast<size_t>(to - from));
    });
    const auto* upd = static_cast<const std::byte*>(in[2].raw());
    parallel_range(tuples, tuples * k_, grain, [&](int64_t begin, int64_t end) {
      for (int64_t n = begin; n < end; ++n) {
        if (slice_bytes_ == 4) std::memcpy(y + offset(n), upd + static_cast<size_t>(n) * 4, 4);  // inlined: one move
        else std::memcpy(y + offset(n), upd + static_cast<size_t>(n) * slice_bytes_, slice_bytes_);
      }
    });
  }
  std::string name() const override { return "scatter_nd_copy"; }

 private:
  const Node& node_;
  Dims dims_;                    // the data's leading k dims, which the tuples index
  int64_t k_;
  size_t slice_bytes_ = 0;
  std::vector<size_t> strides_;  // bytes per step of each indexed dim
};

}  // namespace

std::unique_ptr<Kernel> make_scatter_nd_kernel(const KernelRequest& r) {
  const Node& node = r.node;
  if (node.op != Op::ScatterND || r.inputs.size() != 3 || used_outputs(r) != 1 ||
      node.attr_string("reduction", "none") != "none" || r.inputs[1].dtype != DType::Int64 ||
      r.inputs[2].dtype != r.inputs[0].dtype || r.inputs[1].dims.empty())
    return nullptr;
  const Dims& data = r.inputs[0].dims;
  const int64_t k = r.inputs[1].dims.back();
  if (k < 1 || k > static_cast<int64_t>(data.size())) return nullptr;
  return std::make_unique<ScatterNdKernel>(node, data, k, dtype_size(r.inputs[0].dtype));
}

}  // namespace fusor::cpu
