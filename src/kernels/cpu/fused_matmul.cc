// FusedMatMul (made by fuse_gemm_epilogue and merge_projections) on oneDNN's matmul.
//
// Epilogue form, inputs A, B, [bias], [residual]: A's leading dims collapse into the rows of one
// GEMM against B packed at load (B^T when trans_b); the bias is the primitive's bias, the
// activation an eltwise post-op and the residual a binary-add post-op, so the result is written
// once: dst = act(A B + bias) + residual.
// Merged form (attribute `projections`), inputs A, B1..Bp, then the biases present: the weights
// are concatenated into one [K, sum N] matrix packed at load, one GEMM (with the concatenated
// bias, zero where a member has none) writes [rows, sum N] into scratch, and a copy splits it
// into the members' outputs. On fusor's panel GEMM each panel is stored straight into its
// member's output instead (PanelGemm::execute_split).
#include <cstring>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/matmul_onednn.h"
#include "kernels/cpu/onednn_post_ops.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;

memory::desc dense2(int64_t rows, int64_t cols) { return memory::desc({rows, cols}, dt::f32, memory::dims{cols, 1}); }
size_t aligned64(size_t n) { return (n + 63) / 64 * 64; }

class EpilogueKernel final : public Kernel {
 public:
  EpilogueKernel(OnednnMatmul m, int residual, std::string name)
      : m_(std::move(m)), residual_(residual), name_(std::move(name)) {}
  size_t scratch_bytes() const override { return m_.scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* res = residual_ >= 0 ? in[static_cast<size_t>(residual_)].data<float>() : nullptr;
    m_.execute(in[0].data<float>(), nullptr, nullptr, out[0].data<float>(),
               std::span<const float* const>(&res, residual_ >= 0 ? 1 : 0), scratch);
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return m_.uses_openmp(); }
  bool drops_nan() const override { return m_.drops_nan(); }
  void set_live_rows(int64_t rows) override { m_.set_live_rows(rows); }

 private:
  OnednnMatmul m_;
  int residual_;
  std::string name_;
};

class MergedKernel final : public Kernel {
 public:
  MergedKernel(OnednnMatmul m, int64_t rows, std::vector<int64_t> splits, std::string name)
      : m_(std::move(m)), rows_(rows), splits_(std::move(splits)), name_(std::move(name)),
        direct_(m_.splits_columns()), to_(splits_.size()) {
    for (int64_t n : splits_) total_ += n;
  }
  size_t scratch_bytes() const override {
    if (direct_) return 0;
    return aligned64(static_cast<size_t>(rows_ * total_) * sizeof(float)) + m_.scratch_bytes();
  }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    if (direct_) {  // each panel of the GEMM stores into its projection's output: no copy after
      int64_t begin = 0;
      for (size_t p = 0; p < splits_.size(); ++p) {
        to_[p] = {begin, out[p].data<float>(), splits_[p]};
        begin += splits_[p];
      }
      return m_.execute_split(in[0].data<float>(), to_, {});
    }
    const size_t wide_bytes = aligned64(static_cast<size_t>(rows_ * total_) * sizeof(float));
    float* wide = reinterpret_cast<float*>(scratch.data());
    m_.execute(in[0].data<float>(), nullptr, nullptr, wide, {}, scratch.subspan(wide_bytes));
    parallel_range(rows_, rows_ * total_, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        int64_t off = 0;
        for (size_t p = 0; p < splits_.size(); ++p) {
          std::memcpy(out[p].data<float>() + r * splits_[p], wide + r * total_ + off,
                      static_cast<size_t>(splits_[p]) * sizeof(float));
          off += splits_[p];
        }
      }
    });
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return m_.uses_openmp(); }
  bool drops_nan() const override { return m_.drops_nan(); }
  void set_live_rows(int64_t rows) override { m_.set_live_rows(rows); }

 private:
  OnednnMatmul m_;
  int64_t rows_, total_ = 0;
  std::vector<int64_t> splits_;
  std::string name_;
  bool direct_;  // the panel GEMM writes each projection's output itself
  std::vector<ColumnSplit> to_;  // where, rebuilt each run (the outputs' bytes may move)
};

// The constant float32 input `i` with exactly `n` elements, or nullptr.
const float* const_vector(const KernelRequest& r, size_t i, int64_t n) {
  const Tensor* t = constant_input(r, i);
  return t && t->dtype() == DType::Float32 && t->numel() == n ? t->data<float>() : nullptr;
}

std::unique_ptr<Kernel> make_merged(const KernelRequest& r) {
  const Node& n = r.node;
  const auto splits = n.attr_ints("splits");
  const auto biases = n.attr_ints("biases");
  const size_t p = splits.size();
  if (p < 2 || biases.size() != p || used_outputs(r) != p || !input_is(r, 0, DType::Float32)) return nullptr;
  const Dims& a = r.inputs[0].dims;
  if (a.size() < 2) return nullptr;
  const int64_t k = a.back(), rows = numel_of(a) / std::max<int64_t>(k, 1);
  int64_t total = 0;
  for (int64_t s : splits) total += s;
  if (k == 0 || rows == 0 || total == 0) return nullptr;
  std::vector<float> w(static_cast<size_t>(k * total)), bias(static_cast<size_t>(total), 0.f);
  bool any_bias = false;
  size_t next_bias = 1 + p;
  int64_t off = 0;
  for (size_t m = 0; m < p; ++m) {
    const int64_t nm = splits[m];
    const float* wm = const_vector(r, 1 + m, k * nm);
    if (!wm || r.inputs[1 + m].dims != Dims{k, nm}) return nullptr;
    Dims want = Dims(a.begin(), a.end() - 1);
    want.push_back(nm);
    if (r.outputs[m].dtype != DType::Float32 || r.outputs[m].dims != want) return nullptr;
    for (int64_t kk = 0; kk < k; ++kk)
      std::memcpy(&w[static_cast<size_t>(kk * total + off)], wm + kk * nm, static_cast<size_t>(nm) * sizeof(float));
    if (biases[m]) {
      const float* bm = const_vector(r, next_bias++, nm);
      if (!bm) return nullptr;
      std::memcpy(&bias[static_cast<size_t>(off)], bm, static_cast<size_t>(nm) * sizeof(float));
      any_bias = true;
    }
    off += nm;
  }
  OnednnMatmul::Spec spec;
  spec.src = dense2(rows, k);
  spec.weights = dense2(k, total);
  spec.dst = dense2(rows, total);
  spec.const_weights = w.data();  // packed (copied) in the constructor
  if (any_bias) {
    spec.bias = dense2(1, total);
    spec.const_bias = bias.data();
  }
  try {
    OnednnMatmul mm(std::move(spec));
    std::string name = "matmul_f32_merged" + std::to_string(p) + (any_bias ? "_bias" : "") + mm.name_suffix();
    return std::make_unique<MergedKernel>(std::move(mm), rows, splits, std::move(name));
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::unique_ptr<Kernel> make_epilogue(const KernelRequest& r) {
  const Node& n = r.node;
  const bool has_bias = n.attr_int("has_bias", 0) != 0, has_residual = n.attr_int("has_residual", 0) != 0;
  const bool trans_b = n.attr_int("trans_b", 0) != 0;
  const std::string act = n.attr_string("activation", "none");
  const auto alg = onednn::eltwise_for(act);
  if (act != "none" && !alg) return nullptr;
  if (used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32 || !input_is(r, 0, DType::Float32) ||
      !input_is(r, 1, DType::Float32))
    return nullptr;
  const Dims& a = r.inputs[0].dims;
  const Dims& b = r.inputs[1].dims;
  if (a.size() < 2 || b.size() != 2) return nullptr;
  const int64_t k = a.back(), rows = numel_of(a) / std::max<int64_t>(k, 1);
  const int64_t nn = trans_b ? b[0] : b[1];
  if ((trans_b ? b[1] : b[0]) != k || k == 0 || rows == 0 || nn == 0) return nullptr;
  // The rows may be regrouped (a Reshape in the chain): any output of rows x nn in row order.
  const Dims& out = r.outputs[0].dims;
  if (out.empty() || out.back() != nn || numel_of(out) != rows * nn) return nullptr;
  const Tensor* bc = constant_input(r, 1);
  if (!bc) return nullptr;

  OnednnMatmul::Spec spec;
  spec.src = dense2(rows, k);
  spec.weights = memory::desc({k, nn}, dt::f32, trans_b ? memory::dims{1, k} : memory::dims{nn, 1});
  spec.dst = dense2(rows, nn);
  spec.const_weights = bc->data<float>();
  size_t next = 2;
  std::string name = "matmul_f32";
  if (has_bias) {
    const float* bias = const_vector(r, next++, nn);
    if (!bias) return nullptr;
    spec.bias = dense2(1, nn);
    spec.const_bias = bias;
    name += "_bias";
  }
  if (alg) {
    spec.post_ops.append_eltwise(1.f, *alg, onednn::eltwise_alpha(act, n.attr_float("alpha", 0.01f)), 0.f);
    name += "_" + act;
  }
  int residual = -1;
  if (has_residual) {
    residual = static_cast<int>(next++);
    if (!input_is(r, static_cast<size_t>(residual), DType::Float32) ||
        r.inputs[static_cast<size_t>(residual)].dims != r.outputs[0].dims)
      return nullptr;
    spec.binary_mds.push_back(dense2(rows, nn));
    spec.binary_indices.push_back(spec.post_ops.len());
    spec.post_ops.append_binary(dnnl::algorithm::binary_add, spec.binary_mds.back());
    name += "_residual";
  }
  try {
    OnednnMatmul mm(std::move(spec));
    name += mm.name_suffix();
    return make_epilogue_matmul_kernel(std::move(mm), residual, name);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace

KernelSelection make_fused_matmul_kernel(const KernelRequest& r) {
  return r.node.has_attr("projections") ? make_merged(r) : make_epilogue(r);
}

std::unique_ptr<Kernel> make_epilogue_matmul_kernel(OnednnMatmul m, int residual, std::string name) {
  return std::make_unique<EpilogueKernel>(std::move(m), residual, std::move(name));
}

}  // namespace fusor::cpu
