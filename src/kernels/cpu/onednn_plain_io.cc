#include "kernels/cpu/onednn_plain_io.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

size_t aligned64(size_t n) { return (n + 63) / 64 * 64; }

// The order of a dense permutation of md's dims (no blocks, padding or offset), outermost first.
std::optional<std::vector<int>> dense_order(const dnnl_memory_desc_t& c) {
  const auto& b = c.format_desc.blocking;
  if (c.format_kind != dnnl_blocked || b.inner_nblks != 0 || c.offset0 != 0) return std::nullopt;
  std::vector<int> order(static_cast<size_t>(c.ndims));
  for (int i = 0; i < c.ndims; ++i) {
    if (c.padded_dims[i] != c.dims[i]) return std::nullopt;
    order[static_cast<size_t>(i)] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&](int x, int y) { return b.strides[x] > b.strides[y]; });
  dnnl_dim_t expected = 1;
  for (size_t i = order.size(); i-- > 0;) {
    const int d = order[i];
    if (c.dims[d] == 1) continue;  // any stride describes a dim of one
    if (b.strides[d] != expected) return std::nullopt;
    expected *= c.dims[d];
  }
  return order;
}

}  // namespace

dnnl::memory::format_tag vector_blocked_tag() {
  using tag = dnnl::memory::format_tag;
  switch (simd::lanes()) {
    case 4: return tag::nChw4c;
    case 8: return tag::nChw8c;
    default: return tag::nChw16c;
  }
}

std::string onednn_layout_name(const dnnl::memory::desc& md) {
  const dnnl_memory_desc_t& c = md.data;
  if (auto order = dense_order(c)) return dense_layout_name(*order);
  std::string s = onednn::md_key(md) + ":p";
  for (int i = 0; i < c.ndims; ++i) s += "," + std::to_string(c.padded_dims[i]);
  s += ":b";
  const auto& b = c.format_desc.blocking;
  for (int i = 0; i < b.inner_nblks; ++i) s += "," + std::to_string(b.inner_idxs[i]) + "x" + std::to_string(b.inner_blks[i]);
  return s + ":o" + std::to_string(c.offset0);
}

void add_plain_reorders(PlainIoEntry& e, const dnnl::memory::desc& user_src, const dnnl::memory::desc& user_dst,
                        bool dst_in) {
  auto& eng = onednn::engine();
  if (e.src != user_src) e.src_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_src, eng, e.src));
  if (e.dst != user_dst) e.dst_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, e.dst, eng, user_dst));
  if (e.dst != user_dst && dst_in)
    e.dst_in_reorder = dnnl::reorder(dnnl::reorder::primitive_desc(eng, user_dst, eng, e.dst));
}

std::shared_ptr<PlainIoEntry> plain_io_entry(dnnl::primitive prim, const dnnl::primitive_desc_base& pd,
                                             const dnnl::memory::desc& user_src, const dnnl::memory::desc& user_dst,
                                             bool dst_in) {
  auto e = std::make_shared<PlainIoEntry>();
  e->prim = std::move(prim);
  e->src = pd.src_desc(0);
  e->dst = pd.dst_desc(0);
  e->scratchpad = pd.scratchpad_desc();
  e->weights = pd.weights_desc(0);
  add_plain_reorders(*e, user_src, user_dst, dst_in);
  return e;
}

ConstantArgs packed_weights_and_bias(const PlainIoEntry& entry, const dnnl::memory::desc& w_user, const Tensor& w,
                                     const dnnl::memory::desc& bias_md, const Tensor* bias) {
  ConstantArgs c;
  c.weights = packed_weights(w.data<float>(), w_user, entry.weights);
  c.memories[DNNL_ARG_WEIGHTS] = c.weights->memory();
  if (bias) {
    dnnl::memory b(bias_md, onednn::engine());
    std::memcpy(b.get_data_handle(), bias->data<float>(), bias_md.get_size());
    c.memories[DNNL_ARG_BIAS] = b;
  }
  return c;
}

OnednnPlainIo::OnednnPlainIo(std::shared_ptr<const PlainIoEntry> entry, const dnnl::memory::desc& user_src,
                             const dnnl::memory::desc& user_dst, ConstantArgs constants)
    : entry_(std::move(entry)), weights_(std::move(constants.weights)), args_(std::move(constants.memories)) {
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

std::string OnednnPlainIo::src_layout() const {
  return entry_->src_reorder && entry_->src.get_size() == user_src_.get_desc().get_size() ? onednn_layout_name(entry_->src)
                                                                                         : std::string();
}

std::string OnednnPlainIo::dst_layout() const {
  return entry_->dst_reorder && entry_->dst.get_size() == user_dst_.get_desc().get_size() ? onednn_layout_name(entry_->dst)
                                                                                         : std::string();
}

void OnednnPlainIo::use_blocked(bool src, bool dst, bool accumulate) {
  src_blocked_ = src && !src_layout().empty();
  dst_blocked_ = dst && !dst_layout().empty();
  acc_blocked_ = accumulate && !dst_layout().empty();
  if (src_blocked_) src_bytes_ = 0;
  if (dst_blocked_) dst_bytes_ = 0;
}

void OnednnPlainIo::dst_to_plain(const void* stored, void* plain) const {
  auto& eng = onednn::engine();
  dnnl::memory from(entry_->dst, eng, const_cast<void*>(stored)), to(user_dst_.get_desc(), eng, plain);
  if (entry_->dst_reorder) onednn::execute_reorder(*entry_->dst_reorder, from, to);
  else std::memcpy(plain, stored, entry_->dst.get_size());
  onednn::stream().wait();
}

void OnednnPlainIo::run(const void* src, void* dst, std::span<std::byte> scratch, const void* accumulate) {
  std::byte* at = scratch.data();
  user_src_.set_data_handle(const_cast<void*>(src));
  user_dst_.set_data_handle(dst);
  if (entry_->src_reorder) {
    if (src_blocked_) {
      src_.set_data_handle(const_cast<void*>(src));
    } else {
      src_.set_data_handle(at);
      at += src_bytes_;
      onednn::execute_reorder(*entry_->src_reorder, user_src_, src_);
    }
  }
  if (entry_->dst_reorder) {
    if (dst_blocked_) {
      dst_.set_data_handle(dst);
    } else {
      dst_.set_data_handle(at);
      at += dst_bytes_;
    }
  }
  if (accumulate) {
    if (entry_->dst_reorder && !acc_blocked_) {
      user_acc_.set_data_handle(const_cast<void*>(accumulate));
      onednn::execute_reorder(*entry_->dst_in_reorder, user_acc_, dst_);
    } else if (accumulate != dst_.get_data_handle()) {
      // Same layout on both sides (plain, or dst's blocked one): a copy.
      std::memcpy(dst_.get_data_handle(), accumulate, entry_->dst.get_size());
    }
  }
  scratchpad_.set_data_handle(at);
  onednn::execute(entry_->prim, arg_list_);
  if (entry_->dst_reorder && !dst_blocked_) onednn::execute_reorder(*entry_->dst_reorder, dst_, user_dst_);
  onednn::stream().wait();
}

}  // namespace fusor::cpu
