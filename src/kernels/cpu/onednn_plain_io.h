// Runs a oneDNN primitive (convolution, pooling) whose src/dst may be in a blocked layout for
// callers that hold plain NCHW tensors: src is reordered into scratch before, dst out of it
// after. A primitive with a sum post-op (a fused residual) starts from dst's old contents: the
// caller's tensor to accumulate is copied or reordered into dst first. The primitive's scratchpad and the blocked copies live in the kernel's scratch (the
// executor's arena), and every memory object is built once, so a run allocates nothing.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

#include "runtime/kernel.h"

#include <optional>
#include <string>
#include <span>
#include <unordered_map>
#include <vector>

namespace fusor::cpu {

// A compiled primitive plus what it needs around it; shared through the primitive cache.
struct PlainIoEntry {
  dnnl::primitive prim;
  dnnl::memory::desc src, dst, scratchpad;     // the primitive's own layouts
  dnnl::memory::desc weights;                  // convolution only: the packed weights layout
  std::optional<dnnl::reorder> src_reorder, dst_reorder;
  std::optional<dnnl::reorder> dst_in_reorder;  // user_dst layout -> dst, for a sum post-op
};

// Builds the reorders between `user_src`/`user_dst` and the primitive's layouts (`dst_in`: also
// the one that brings a plain tensor into dst's layout).
void add_plain_reorders(PlainIoEntry& entry, const dnnl::memory::desc& user_src, const dnnl::memory::desc& user_dst,
                        bool dst_in = false);

class OnednnPlainIo {
 public:
  // `extra_args` are constant arguments such as packed weights and bias.
  OnednnPlainIo(std::shared_ptr<const PlainIoEntry> entry, const dnnl::memory::desc& user_src,
                const dnnl::memory::desc& user_dst, std::unordered_map<int, dnnl::memory> extra_args);

  size_t scratch_bytes() const;
  // `accumulate`, when set, is a tensor of dst's plain shape that dst starts from (sum post-op).
  void run(const float* src, float* dst, std::span<std::byte> scratch, const float* accumulate = nullptr);

 private:
  std::shared_ptr<const PlainIoEntry> entry_;
  dnnl::memory user_src_, user_dst_, user_acc_, src_, dst_, scratchpad_;
  std::unordered_map<int, dnnl::memory> args_;  // keeps the memory objects alive
  std::vector<dnnl_exec_arg_t> arg_list_;
  size_t src_bytes_ = 0, dst_bytes_ = 0;  // blocked copies in scratch (0 when not needed)
};

// A kernel that is one such primitive: input 0 in, output 0 out (Conv, pooling), plus input
// `accumulate` (when >= 0) as dst's starting value.
class PlainIoKernel final : public Kernel {
 public:
  PlainIoKernel(OnednnPlainIo io, std::string name, int accumulate = -1)
      : io_(std::move(io)), name_(std::move(name)), accumulate_(accumulate) {}
  size_t scratch_bytes() const override { return io_.scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    io_.run(in[0].data<float>(), out[0].data<float>(), scratch,
            accumulate_ >= 0 ? in[static_cast<size_t>(accumulate_)].data<float>() : nullptr);
  }
  std::string name() const override { return name_; }

 private:
  OnednnPlainIo io_;
  std::string name_;
  int accumulate_;
};

}  // namespace fusor::cpu
