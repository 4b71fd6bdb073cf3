// Gather along any axis: for each position before the axis (`outer`; one for axis 0, the
// embedding lookup), each index selects one contiguous block of `data` (everything after the
// axis), copied with memcpy. Any data dtype; int64 or int32 indices; negative indices wrap.
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

template <class I>
class GatherRowsKernel final : public Kernel {
 public:
  GatherRowsKernel(const Node& node, int64_t outer, int64_t rows, size_t row_bytes)
      : node_(node), outer_(outer), rows_(rows), row_bytes_(row_bytes) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const auto* data = static_cast<const char*>(in[0].raw());
    const I* idx = static_cast<const I*>(in[1].raw());
    auto* y = static_cast<char*>(out[0].raw());
    const int64_t n = in[1].numel();
    for (int64_t o = 0; o < outer_; ++o) {
      const char* from = data + static_cast<size_t>(o * rows_) * row_bytes_;
      char* to = y + static_cast<size_t>(o * n) * row_bytes_;
      for (int64_t i = 0; i < n; ++i) {
        int64_t k = static_cast<int64_t>(idx[i]);
        if (k < 0) k += rows_;
        if (k < 0 || k >= rows_)
          throw Error(node_.describe() + ": index " + std::to_string(idx[i]) + " is out of range [" +
                          std::to_string(-rows_) + ", " + std::to_string(rows_) + ")",
                      ErrorKind::InvalidArgument);
        std::memcpy(to + static_cast<size_t>(i) * row_bytes_, from + static_cast<size_t>(k) * row_bytes_, row_bytes_);
      }
    }
  }
  std::string name() const override { return "gather_rows_memcpy"; }

 private:
  const Node& node_;
  int64_t outer_, rows_;
  size_t row_bytes_;
};

}  // namespace

std::unique_ptr<Kernel> make_gather_kernel(const KernelRequest& r) {
  const Node& node = r.node;
  if (node.op != Op::Gather || r.inputs.size() != 2 || used_outputs(r) != 1) return nullptr;
  const Dims& data = r.inputs[0].dims;
  if (data.empty()) return nullptr;
  int64_t axis = node.attr_int("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(data.size());
  if (axis < 0 || axis >= static_cast<int64_t>(data.size())) return nullptr;
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= data[static_cast<size_t>(i)];
  size_t row_bytes = dtype_size(r.inputs[0].dtype);
  for (size_t i = static_cast<size_t>(axis) + 1; i < data.size(); ++i) row_bytes *= static_cast<size_t>(data[i]);
  const int64_t rows = data[static_cast<size_t>(axis)];
  if (r.inputs[1].dtype == DType::Int64) return std::make_unique<GatherRowsKernel<int64_t>>(node, outer, rows, row_bytes);
  if (r.inputs[1].dtype == DType::Int32) return std::make_unique<GatherRowsKernel<int32_t>>(node, outer, rows, row_bytes);
  return nullptr;
}

}  // namespace fusor::cpu
