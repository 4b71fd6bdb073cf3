#include "kernels/cpu/onednn_plain_io.h"

#include <cstring>

#include "kernels/cpu/onednn_context.h"

namespace fusor::cpu {
namespace {

size_t aligned64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

void add_plain_reorders(PlainIoEntry& e, const dnnl::memory::desc& user_src, const dnnl::memory::desc& user_dst,
                        bool dst_in) {
  auto& eng = onednn::engine();
  if (e.src != user_src) e.src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_src, eng, e.src));
  if (e.dst != user_dst) e.dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, e.dst, eng, user_dst));
  if (e.dst != user_dst && dst_in)
    e.dst_in_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_dst, eng, e.dst));
}

OnednnPlainIo::OnednnPlainIo(std::shared_ptr<const PlainIoEntry> entry, const dnnl::memory::desc& user_src,
                             const dnnl::memory::desc& user_dst, std::unordered_map<int, dnnl::memory> extra_args)
    : entry_(std::move(entry)), args_(std::move(extra_args)) {
  auto& eng = onednn::engine();
  user_src_ = dnnl::memory(user_src, eng, DNNL_MEMORY_NONE);
  user_dst_ = dnnl::memory(user_dst, eng, DNNL_MEMORY_NONE);
  user_acc_ = dnnl::memory(user_dst, eng, DNNL_MEMORY_NONE);
  src_ = entry_->src_reorder ? dnnl::memory(entry_->src, eng, DNNL_MEMORY_NONE) : user_src_;
  dst_ = entry_->dst_reorder ? dnnl::memory(entry_->dst, eng, DNNL_MEMORY_NONE) : user_dst_;
  scratchpad_ = dnnl::memory(entry_->scratchpad, eng, DNNL_MEMORY_NONE);
  if (entry_->src_reorder) src_bytes_ = aligned64(entry_->src.get_size());
  if (entry_->dst_reorder) dst_bytes_ = aligned64(entry_->dst.get_size());
  args_[DNNL_ARG_SRC] = src_;
  args_[DNNL_ARG_DST] = dst_;
  args_[DNNL_ARG_SCRATCHPAD] = scratchpad_;
  arg_list_ = onednn::arg_list(args_);
}

size_t OnednnPlainIo::scratch_bytes() const { return src_bytes_ + dst_bytes_ + entry_->scratchpad.get_size(); }

void OnednnPlainIo::run(const float* src, float* dst, std::span<std::byte> scratch, const float* accumulate) {
  std::byte* at = scratch.data();
  user_src_.set_data_handle(const_cast<float*>(src));
  user_dst_.set_data_handle(dst);
  if (entry_->src_reorder) {
    src_.set_data_handle(at);
    at += src_bytes_;
    onednn::execute_reorder(*entry_->src_reorder, user_src_, src_);
  }
  if (entry_->dst_reorder) {
    dst_.set_data_handle(at);
    at += dst_bytes_;
  }
  if (accumulate) {
    if (entry_->dst_reorder) {
      user_acc_.set_data_handle(const_cast<float*>(accumulate));
      onednn::execute_reorder(*entry_->dst_in_reorder, user_acc_, dst_);
    } else if (accumulate != dst) {
      std::memcpy(dst, accumulate, user_dst_.get_desc().get_size());
    }
  }
  scratchpad_.set_data_handle(at);
  onednn::execute(entry_->prim, arg_list_);
  if (entry_->dst_reorder) onednn::execute_reorder(*entry_->dst_reorder, dst_, user_dst_);
  onednn::stream().wait();
}

}  // namespace fusor::cpu
