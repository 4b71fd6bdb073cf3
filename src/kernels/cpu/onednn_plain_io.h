// Runs a oneDNN primitive (convolution, pooling) whose src/dst may be in a blocked layout for
// callers that hold plain NCHW tensors: src is reordered into scratch before, dst out of it
// after. A primitive with a sum post-op (a fused residual) starts from dst's old contents: the
// caller's tensor to accumulate is copied or reordered into dst first. The primitive's scratchpad and the blocked copies live in the kernel's scratch (the
// executor's arena), and every memory object is built once, so a run allocates nothing. When the
// plan stores a value in the primitive's blocked layout (plan/layouts.h), that reorder is skipped.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/packed_weights.h"
#include "kernels/kernel.h"

#include <memory>
#include <optional>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

namespace fusor::cpu {

// A name that tells two layouts apart: a dense permutation's name (dense_layout.h), else dims,
// strides, inner blocks and padding. Kernels that read a layout compare names.
std::string onednn_layout_name(const dnnl::memory::desc& md);

// oneDNN's channel-blocked layout whose block is one vector of floats (nChw8c on AVX2, nChw16c
// on AVX-512): what fusor's own convolutions write when a block of output channels is a vector.
dnnl::memory::format_tag vector_blocked_tag();

// A compiled primitive plus what it needs around it; shared through the primitive cache.
struct PlainIoEntry {
  dnnl::primitive prim;
  dnnl::memory::desc src, dst, scratchpad;     // the primitive's own layouts
  dnnl::memory::desc weights;                  // convolution only: the packed weights layout
  bool winograd = false;                       // convolution only: the Winograd algorithm
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  std::optional<dnnl::reorder> dst_in_reorder;  // user_dst layout -> dst, for a sum post-op
};

// Builds the reorders between `user_src`/`user_dst` and the primitive's layouts (`dst_in`: also
// the one that brings a plain tensor into dst's layout).
void add_plain_reorders(PlainIoEntry& entry, const dnnl::memory::desc& user_src, const dnnl::memory::desc& user_dst,
                        bool dst_in = false);

// A new entry for `prim`, compiled as `pd` (with a user scratchpad): the primitive's layouts,
// weights' included where it has any, and the reorders to and from the caller's (above).
std::shared_ptr<PlainIoEntry> plain_io_entry(dnnl::primitive prim, const dnnl::primitive_desc_base& pd,
                                             const dnnl::memory::desc& user_src, const dnnl::memory::desc& user_dst,
                                             bool dst_in = false);

// Constant arguments of a primitive by argument index, and the shared packed weights among them
// (held here so they live as long as the kernel).
struct ConstantArgs {
  std::unordered_map<int, dnnl::memory> memories;
  std::shared_ptr<const PackedWeights> weights;
};

// The constant arguments of a convolution-like primitive: float32 weights `w`, laid out as
// `w_user`, packed into entry.weights (shared: packed_weights.h), and the bias (when given)
// copied into `bias_md`.
ConstantArgs packed_weights_and_bias(const PlainIoEntry& entry, const dnnl::memory::desc& w_user, const Tensor& w,
                                     const dnnl::memory::desc& bias_md, const Tensor* bias);

class OnednnPlainIo {
 public:
  // `constants` are constant arguments such as packed weights and bias.
  OnednnPlainIo(std::shared_ptr<const PlainIoEntry> entry, const dnnl::memory::desc& user_src,
                const dnnl::memory::desc& user_dst, ConstantArgs constants);

  size_t scratch_bytes() const;
  // `accumulate`, when set, is a tensor of dst's plain shape that dst starts from (sum post-op).
  // Element types are the descs' (float32 for Conv, u8/s8 in and s32 out for ConvInteger).
  void run(const void* src, void* dst, std::span<std::byte> scratch, const void* accumulate = nullptr);

  // Blocked layouts between kernels (plan/layouts.h): the names of src's and dst's blocked
  // layouts ("" when the primitive uses the plain one, or dst's is larger than the plain).
  std::string src_layout() const;
  std::string dst_layout() const;
  // src, dst and the accumulated tensor already are / may stay in those layouts: skip reorders.
  void use_blocked(bool src, bool dst, bool accumulate);
  // Reorders a dst stored in dst_layout() to the plain layout.
  void dst_to_plain(const void* stored, void* plain) const;

 private:
  std::shared_ptr<const PlainIoEntry> entry_;
  std::shared_ptr<const PackedWeights> weights_;
  dnnl::memory user_src_, user_dst_, user_acc_, src_, dst_, scratchpad_;
  std::unordered_map<int, dnnl::memory> args_;  // keeps the memory objects alive
  std::vector<dnnl_exec_arg_t> arg_list_;
  size_t src_bytes_ = 0, dst_bytes_ = 0;  // blocked copies in scratch (0 when not needed)
  bool src_blocked_ = false, dst_blocked_ = false, acc_blocked_ = false;
};

// A kernel that is one such primitive: input 0 in, output 0 out (Conv, pooling, the int8
// QuantizedConv), plus input `accumulate` (when >= 0) as dst's starting value.
class PlainIoKernel final : public Kernel {
 public:
  // `drops_nan`: Kernel::drops_nan (a ReLU post-op, max pooling).
  PlainIoKernel(OnednnPlainIo io, std::string name, int accumulate = -1, bool drops_nan = false)
      : io_(std::move(io)), name_(std::move(name)), accumulate_(accumulate), drops_nan_(drops_nan) {}
  size_t scratch_bytes() const override { return io_.scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    io_.run(in[0].raw(), out[0].raw(), scratch, accumulate_ >= 0 ? in[static_cast<size_t>(accumulate_)].raw() : nullptr);
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return true; }
  bool drops_nan() const override { return drops_nan_; }
  std::string offered_output_layout() const override { return io_.dst_layout(); }
  bool accepts_input_layout(size_t index, const std::string& layout) const override {
    if (layout.empty()) return false;
    if (index == 0) return layout == io_.src_layout();
    return accumulate_ >= 0 && index == static_cast<size_t>(accumulate_) && layout == io_.dst_layout();
  }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    auto blocked = [&](int i) { return i >= 0 && static_cast<size_t>(i) < inputs.size() && !inputs[i].empty(); };
    io_.use_blocked(blocked(0), output_blocked, blocked(accumulate_));
  }
  void output_to_plain(const Tensor& stored, Tensor& plain) const override {
    io_.dst_to_plain(stored.raw(), plain.raw());
  }

 private:
  OnednnPlainIo io_;
  std::string name_;
  int accumulate_;
  bool drops_nan_;
};

}  // namespace fusor::cpu
