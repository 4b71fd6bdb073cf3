// Concat and Split: one tensor and its parts along an axis. Viewed as [outer, axis * inner], every
// part is one contiguous run per outer row, so a run is memcpys. The runs of an outer row are cut
// into segments of at most kSegmentBytes, and the (row, segment) pairs are split over the thread
// pool: YOLO's channel concats have few outer rows (the batch) but long runs. Any dtype, since
// bytes are copied; the same results as the reference kernels (kernels/ref/layout.cc).
//
// Both follow a dense layout (channels-last, dense_layout.h): Concat when all its parts arrive in
// it, Split when its whole does, writing every part in it too. The copies are the same over the
// dims in storage order, so YOLO's C2f blocks (Split of a convolution's output, Concat of the
// parts) need no reorders to row-major and back. Blocked layouts (nChw16c) are not followed.
#include <cstring>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/factories.h"

namespace fusor::cpu {
namespace {

constexpr size_t kSegmentBytes = 64 * 1024;

int64_t product(const Dims& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

// Channels-last runs are a pixel's few channels (64 or 128 bytes in YOLO): a call to memcpy per
// run cost more than the bytes (perf: memmove's size dispatch). Short runs are copied here in
// 32-byte pieces the compiler turns into vector moves.
inline void copy_run(std::byte* dst, const std::byte* src, size_t bytes) {
  constexpr size_t kPiece = 32, kShort = 512;
  if (bytes > kShort || bytes % kPiece != 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  for (size_t i = 0; i < bytes; i += kPiece) std::memcpy(dst + i, src + i, kPiece);
}

// A piece of one part's run within an outer row.
struct Segment {
  size_t part, part_offset, whole_offset, bytes;
};

class ConcatSplitKernel final : public FollowsDenseLayout {
 public:
  // `to_whole`: Concat (parts -> whole); the parts' dims differ from the whole's on `axis` only.
  ConcatSplitKernel(bool to_whole, const Dims& whole, std::vector<Dims> parts, size_t axis, size_t element_bytes)
      : to_whole_(to_whole), whole_(whole), parts_(std::move(parts)), axis_(axis), es_(element_bytes) {
    arrange(whole_, parts_, axis_);
  }

  bool follows_layout(const std::string& layout) const override {
    const auto order = dense_layout_order(layout);
    return order && order->size() == whole_.size();
  }
  // Concat's parts; Split's whole, not its sizes.
  bool follows_input(size_t index) const override { return to_whole_ || index == 0; }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    if (!output_blocked) return;
    order_ = *dense_layout_order(inputs[0]);
    std::vector<Dims> parts;
    for (const Dims& p : parts_) parts.push_back(dims_in_order(p, order_));
    size_t axis = 0;
    while (order_[axis] != static_cast<int>(axis_)) ++axis;
    arrange(dims_in_order(whole_, order_), parts, axis);
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte>) override {
    const int64_t per_row = static_cast<int64_t>(segments_.size());
    if (outer_ == 0 || per_row == 0) return;
    std::byte* whole = to_whole_ ? static_cast<std::byte*>(out[0].raw()) : nullptr;
    const std::byte* whole_in = to_whole_ ? nullptr : static_cast<const std::byte*>(in[0].raw());
    const int64_t items = outer_ * per_row;
    const int64_t work = outer_ * static_cast<int64_t>(whole_row_ / es_);
    parallel_range(items, work, 1, [&](int64_t begin, int64_t end) {
      // Channels-last parts are short runs (a few channels per pixel), so no division per item.
      size_t row = static_cast<size_t>(begin / per_row), seg = static_cast<size_t>(begin % per_row);
      for (int64_t i = begin; i < end; ++i) {
        const Segment& s = segments_[seg];
        const size_t part_at = row * part_row_[s.part] + s.part_offset;
        const size_t whole_at = row * whole_row_ + s.whole_offset;
        if (to_whole_) copy_run(whole + whole_at, static_cast<const std::byte*>(in[s.part].raw()) + part_at, s.bytes);
        else copy_run(static_cast<std::byte*>(out[s.part].raw()) + part_at, whole_in + whole_at, s.bytes);
        if (++seg == segments_.size()) seg = 0, ++row;
      }
    });
  }
  std::string name() const override { return std::string(to_whole_ ? "concat" : "split") + "_rows_x" + std::to_string(es_ * 8); }

 private:
  // The rows and segments of `whole` cut along `axis` into `parts` (dims in storage order).
  void arrange(const Dims& whole, const std::vector<Dims>& parts, size_t axis) {
    outer_ = product(whole, 0, axis);
    part_row_.clear();
    segments_.clear();
    whole_row_ = 0;
    for (size_t k = 0; k < parts.size(); ++k) {
      part_row_.push_back(static_cast<size_t>(product(parts[k], axis, parts[k].size())) * es_);
      for (size_t off = 0; off < part_row_[k]; off += kSegmentBytes)
        segments_.push_back({k, off, whole_row_ + off, std::min(kSegmentBytes, part_row_[k] - off)});
      whole_row_ += part_row_[k];
    }
  }

  bool to_whole_;
  Dims whole_;
  std::vector<Dims> parts_;
  size_t axis_;
  size_t es_;
  int64_t outer_ = 0;
  std::vector<size_t> part_row_;  // bytes of each part per outer row
  size_t whole_row_ = 0;
  std::vector<Segment> segments_;
};

// The kernel for `whole` cut along `axis` into `parts`, or nullptr when the dims do not fit together.
std::unique_ptr<Kernel> make_rows_kernel(bool to_whole, const Node& n, const TensorType& whole,
                                         std::span<const TensorType> parts) {
  const auto rank = static_cast<int64_t>(whole.dims.size());
  if (rank == 0 || whole.dtype == DType::Undefined) return nullptr;
  const auto axis = static_cast<size_t>(normalize_axis(n.attr_int("axis", 0), rank, n));
  const size_t es = dtype_size(whole.dtype);
  int64_t along = 0;
  std::vector<Dims> part_dims;
  for (const TensorType& p : parts) {
    if (p.dtype != whole.dtype || p.dims.size() != whole.dims.size()) return nullptr;
    for (size_t d = 0; d < p.dims.size(); ++d)
      if (d != axis && p.dims[d] != whole.dims[d]) return nullptr;
    along += p.dims[axis];
    part_dims.push_back(p.dims);
  }
  if (along != whole.dims[axis]) return nullptr;
  return std::make_unique<ConcatSplitKernel>(to_whole, whole.dims, std::move(part_dims), axis, es);
}

}  // namespace

std::unique_ptr<Kernel> make_concat_kernel(const KernelRequest& r) {
  if (r.node.op != Op::Concat || r.inputs.empty() || r.outputs.size() != 1) return nullptr;
  for (size_t i = 0; i < r.inputs.size(); ++i)
    if (!has_input(r, i)) return nullptr;
  return make_rows_kernel(true, r.node, r.outputs[0], r.inputs);
}

// Split's sizes are read from the planned output shapes (every opset's split input, attribute
// or num_outputs has already given them); an omitted output declines.
std::unique_ptr<Kernel> make_split_kernel(const KernelRequest& r) {
  if (r.node.op != Op::Split || r.inputs.empty() || r.outputs.empty() || r.outputs.size() != r.node.outputs.size()) return nullptr;
  for (int o : r.node.outputs)
    if (o < 0) return nullptr;
  return make_rows_kernel(false, r.node, r.inputs[0], r.outputs);
}

}  // namespace fusor::cpu
