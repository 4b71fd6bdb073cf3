// MatMul and Gemm (float32) on oneDNN's matmul primitive.
//
// MatMul: when B has no batch dims (or only 1s) A's leading dims collapse into M, giving one
// large 2-D GEMM against packed weights ("matmul_f32_panel", "_gemv" or "_onednn_packed": what
// runs it, OnednnMatmul::name_suffix). Otherwise both operands keep their numpy batch dims and
// oneDNN broadcasts them ("matmul_f32_batched_onednn", e.g. attention's [B,H,S,D] x [B,H,D,S]).
// Gemm: transA/transB become strides; alpha is folded into packed weights (or a linear post-op);
// beta*C becomes a bias when C is a constant row vector, else a binary-add post-op (a runtime C
// only with beta == 1).
#include "kernels/cpu/matmul_onednn.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/onednn_context.h"

namespace fusor::cpu {
namespace {

// FUSOR_GEMM_TILES=0 keeps every GEMM on oneDNN's own OpenMP threading (for comparisons).
bool tiles_enabled() {
  static const bool on = env_switch_on("FUSOR_GEMM_TILES");
  return on;
}

// A GEMM this small (multiply-adds) runs on the calling thread alone: an OpenMP team costs more
// to start than the work (e.g. the rotary embedding's inv_freq x position_ids, 32 x 1 x 1 per
// decode step), and one OpenMP kernel puts its whole plan's jobs on an OpenMP team (build_plan).
constexpr int64_t kSingleThreadMacs = 64 * 1024;

}  // namespace

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

OnednnMatmul::OnednnMatmul(Spec spec) : spec_(std::move(spec)) {
  memory::desc wei_md = spec_.const_weights
                            ? memory::desc(spec_.weights.dims(), dt::f32, tag::any)
                            : spec_.weights;
  std::string key = "matmul";
  for (const auto* md : {&spec_.src, &wei_md, &spec_.bias, &spec_.dst}) key.append("|").append(onednn::md_key(*md));
  key.append("|").append(onednn::post_ops_key(spec_.post_ops));  // binary operands' layouts included
  const memory::dims& w_dims = spec_.weights.dims();
  const int64_t macs = static_cast<int64_t>(spec_.dst.get_size() / sizeof(float)) * w_dims[w_dims.size() - 2];
  single_thread_ = macs <= kSingleThreadMacs;
  if (single_thread_) key.append("|t1");
  std::optional<onednn::OmpThreads> one;
  if (single_thread_) one.emplace(1);
  entry_ = onednn::cached_as<Entry>(key, [&] {
    dnnl::primitive_attr attr;
    attr.set_post_ops(spec_.post_ops);
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // scratch lives in the executor's arena
    auto make_pd = [&](const memory::desc& w) {
      auto desc = spec_.bias.is_zero() ? dnnl::matmul::desc(spec_.src, w, spec_.dst)
                                       : dnnl::matmul::desc(spec_.src, w, spec_.bias, spec_.dst);
      return dnnl::matmul::primitive_desc(desc, attr, onednn::engine());
    };
    dnnl::matmul::primitive_desc pd = make_pd(wei_md);
    // Without brgemm (no AVX-512), "any" gives plain row-major weights, and oneDNN's jit sgemm
    // then repacks B on every call: 128x384x1536 runs at ~44 GFLOP/s. Weights stored transposed
    // (K contiguous per output column) run at ~165 GFLOP/s, measured side by side here.
    if (spec_.const_weights && wei_md.dims().size() == 2 && std::string(pd.impl_info_str()).rfind("gemm:", 0) == 0)
      pd = make_pd(memory::desc(wei_md.dims(), dt::f32, tag::ba));
    auto e = std::make_shared<Entry>();
    e->pd = pd;
    e->prim = dnnl::matmul(pd);
    return e;
  });
  // Where oneDNN's matmul is its sgemm (no AVX-512), which packs weights again on every call, two
  // rows and more run on weights packed once (panel_gemm.h); one row stays PackedGemv's.
  const bool sgemm = std::string(entry_->pd.impl_info_str()).rfind("gemm:", 0) == 0;
  if (spec_.const_weights && sgemm && spec_.src.data.ndims == 2 && spec_.src.dims()[0] >= 2)
    panel_ = PanelGemm::make(spec_.src, spec_.weights, spec_.const_weights, spec_.dst, !spec_.bias.is_zero(),
                             spec_.post_ops);
  if (spec_.const_weights && !panel_)
    packed_weights_ = packed_weights(spec_.const_weights, spec_.weights, entry_->pd.weights_desc());
  if (spec_.const_bias) {
    size_t n = spec_.bias.get_size() / sizeof(float);
    bias_copy_.assign(spec_.const_bias, spec_.const_bias + n);
  }
  auto& eng = onednn::engine();
  src_mem_ = memory(spec_.src, eng, DNNL_MEMORY_NONE);
  weights_mem_ = packed_weights_ ? packed_weights_->memory() : memory(spec_.weights, eng, DNNL_MEMORY_NONE);
  dst_mem_ = memory(spec_.dst, eng, DNNL_MEMORY_NONE);
  scratch_mem_ = memory(entry_->pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
  args_ = {{DNNL_ARG_SRC, src_mem_}, {DNNL_ARG_WEIGHTS, weights_mem_}, {DNNL_ARG_DST, dst_mem_},
           {DNNL_ARG_SCRATCHPAD, scratch_mem_}};
  if (!spec_.bias.is_zero()) {
    bias_mem_ = memory(spec_.bias, eng, bias_copy_.empty() ? DNNL_MEMORY_NONE : bias_copy_.data());
    args_.emplace(DNNL_ARG_BIAS, bias_mem_);
  }
  for (size_t i = 0; i < spec_.binary_mds.size(); ++i) {
    binary_mems_.push_back(memory(spec_.binary_mds[i], eng, DNNL_MEMORY_NONE));
    args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(spec_.binary_indices[i]) | DNNL_ARG_SRC_1, binary_mems_.back());
  }
  arg_list_ = onednn::arg_list(args_);
  if (packed_weights_)
    gemv_ = PackedGemv::make(spec_.src, weights_mem_.get_desc(), spec_.dst, !spec_.bias.is_zero(), spec_.post_ops);
  if (packed_weights_ && !gemv_)
    rows_ = PackedRowsGemm::make(spec_.src, weights_mem_.get_desc(), spec_.dst, !spec_.bias.is_zero(), spec_.post_ops);
  if (tiles_enabled() && !fusor_loop() && !single_thread_)
    split_ = MatmulTileSplit::make({spec_.src, weights_mem_.get_desc(), spec_.bias, spec_.dst, spec_.post_ops,
                                    spec_.binary_mds, spec_.binary_indices},
                                   thread_width());
}

size_t OnednnMatmul::scratch_bytes() const {
  const size_t full = entry_->pd.scratchpad_desc().get_size();
  return split_ ? std::max(full, split_->scratch_bytes()) : full;
}

void OnednnMatmul::execute(const float* src, const float* weights, const float* bias, float* dst,
                           std::span<const float* const> binary, std::span<std::byte> scratch) {
  src_mem_.set_data_handle(const_cast<float*>(src));
  if (!packed_weights_) weights_mem_.set_data_handle(const_cast<float*>(weights));
  dst_mem_.set_data_handle(dst);
  scratch_mem_.set_data_handle(scratch.data());
  if (!spec_.bias.is_zero() && bias_copy_.empty()) bias_mem_.set_data_handle(const_cast<float*>(bias));
  const float* b = spec_.bias.is_zero() ? nullptr : bias_copy_.empty() ? bias : bias_copy_.data();
  const float* w = static_cast<const float*>(weights_mem_.get_data_handle());
  if (panel_) return panel_->execute(src, b, dst, binary, live_rows_);
  if (gemv_) return gemv_->execute(src, w, b, dst, binary);
  if (rows_) return rows_->execute(src, w, b, dst, binary, live_rows_);
  if (split_) return split_->execute(src, w, b, dst, binary, scratch);
  for (size_t i = 0; i < binary_mems_.size(); ++i) binary_mems_[i].set_data_handle(const_cast<float*>(binary[i]));
  std::optional<onednn::OmpThreads> one;
  if (single_thread_) one.emplace(1);
  onednn::execute(entry_->prim, arg_list_);
  onednn::stream().wait();
}

void OnednnMatmul::execute_split(const float* src, std::span<const ColumnSplit> splits,
                                 std::span<const float* const> binary) const {
  // The bias, when there is one, is a constant copied at build time (merge_projections' biases).
  const float* bias = bias_copy_.empty() ? nullptr : bias_copy_.data();
  if (rows_)
    return rows_->execute_split(src, static_cast<const float*>(weights_mem_.get_data_handle()), bias, splits, binary,
                                live_rows_);
  panel_->execute_split(src, bias, splits, binary, live_rows_);
}

std::string OnednnMatmul::impl() const {
  return panel_ ? "fusor:panel_gemm" : gemv_ ? "fusor:gemv" : rows_ ? "fusor:packed_rows" : entry_->pd.impl_info_str();
}

std::string OnednnMatmul::name_suffix() const {
  if (panel_) return "_panel";
  if (gemv_) return "_gemv";
  if (rows_) return "_rows";
  return packed_weights_ ? "_onednn_packed" : "_onednn";
}

namespace {

memory::dims row_major_strides(const memory::dims& d) {
  memory::dims s(d.size());
  memory::dim acc = 1;
  for (size_t i = d.size(); i-- > 0;) {
    s[i] = acc;
    acc *= d[i];
  }
  return s;
}

memory::desc dense(const memory::dims& d) { return memory::desc(d, dt::f32, row_major_strides(d)); }

class MatmulKernel final : public Kernel {
 public:
  MatmulKernel(OnednnMatmul m, std::string name) : m_(std::move(m)), name_(std::move(name)) {}
  size_t scratch_bytes() const override { return m_.scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    m_.execute(in[0].data<float>(), m_.packed() ? nullptr : in[1].data<float>(), nullptr, out[0].data<float>(), {},
               scratch);
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return m_.uses_openmp(); }
  void set_live_rows(int64_t rows) override { m_.set_live_rows(rows); }

 private:
  OnednnMatmul m_;
  std::string name_;
};

class GemmKernel final : public Kernel {
 public:
  GemmKernel(OnednnMatmul m, bool c_runtime, std::vector<float> c_const, std::string name)
      : m_(std::move(m)), c_runtime_(c_runtime), c_const_(std::move(c_const)), name_(std::move(name)) {}
  size_t scratch_bytes() const override { return m_.scratch_bytes(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* c = c_runtime_ ? in[2].data<float>() : c_const_.data();
    const bool has_c = c_runtime_ || !c_const_.empty();
    m_.execute(in[0].data<float>(), m_.packed() ? nullptr : in[1].data<float>(), nullptr, out[0].data<float>(),
               std::span<const float* const>(&c, has_c ? 1 : 0), scratch);
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return m_.uses_openmp(); }
  void set_live_rows(int64_t rows) override { m_.set_live_rows(rows); }

 private:
  OnednnMatmul m_;
  bool c_runtime_;
  std::vector<float> c_const_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_kernel(const KernelRequest& r) {
  if (r.node.op != Op::MatMul || r.inputs.size() != 2 || !input_is(r, 0, DType::Float32) ||
      !input_is(r, 1, DType::Float32) || used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32)
    return nullptr;
  Dims a = r.inputs[0].dims, b = r.inputs[1].dims;
  if (a.empty() || b.empty()) return nullptr;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  if (b[b.size() - 2] != K || M == 0 || K == 0 || N == 0) return nullptr;
  const Tensor* bc = constant_input(r, 1);
  bool b_batch_ones = true;
  for (size_t i = 0; i + 2 < b.size(); ++i) b_batch_ones &= b[i] == 1;

  OnednnMatmul::Spec spec;
  spec.const_weights = bc ? bc->data<float>() : nullptr;
  std::string name;
  if (b_batch_ones) {
    const int64_t rows = numel_of(a) / K;
    spec.src = dense({rows, K});
    spec.weights = dense({K, N});
    spec.dst = dense({rows, N});
    name = "matmul_f32";
  } else {
    const size_t rank = std::max(a.size(), b.size());
    a.insert(a.begin(), rank - a.size(), 1);
    b.insert(b.begin(), rank - b.size(), 1);
    if (rank > 12) return nullptr;
    memory::dims d(rank);
    for (size_t i = 0; i + 2 < rank; ++i) {
      if (a[i] != b[i] && a[i] != 1 && b[i] != 1) return nullptr;
      d[i] = std::max(a[i], b[i]);
    }
    d[rank - 2] = M;
    d[rank - 1] = N;
    // Equal batch dims collapse into one, which every oneDNN implementation handles.
    if (std::equal(a.begin(), a.end() - 2, b.begin())) {
      int64_t batch = numel_of(Dims(a.begin(), a.end() - 2));
      a = {batch, M, K};
      b = {batch, K, N};
      d = {batch, M, N};
    }
    spec.src = dense(memory::dims(a.begin(), a.end()));
    spec.weights = dense(memory::dims(b.begin(), b.end()));
    spec.dst = dense(d);
    name = "matmul_f32_batched";
  }
  if (static_cast<int64_t>(spec.dst.get_size() / sizeof(float)) != numel_of(r.outputs[0].dims)) return nullptr;
  try {
    OnednnMatmul m(std::move(spec));
    name += m.name_suffix();
    return std::make_unique<MatmulKernel>(std::move(m), name);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

std::unique_ptr<Kernel> make_gemm_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (n.op != Op::Gemm || r.inputs.size() < 2 || !input_is(r, 0, DType::Float32) ||
      !input_is(r, 1, DType::Float32) || used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32)
    return nullptr;
  const Dims& a = r.inputs[0].dims;
  const Dims& b = r.inputs[1].dims;
  if (a.size() != 2 || b.size() != 2) return nullptr;
  const bool ta = n.attr_int("transA", 0) != 0, tb = n.attr_int("transB", 0) != 0;
  const float alpha = n.attr_float("alpha", 1.f), beta = n.attr_float("beta", 1.f);
  const int64_t M = ta ? a[1] : a[0], K = ta ? a[0] : a[1];
  const int64_t N = tb ? b[0] : b[1];
  if ((tb ? b[1] : b[0]) != K || M == 0 || N == 0 || K == 0) return nullptr;
  if (r.outputs[0].dims != Dims{M, N}) return nullptr;

  OnednnMatmul::Spec spec;
  spec.src = memory::desc({M, K}, dt::f32, ta ? memory::dims{1, M} : memory::dims{K, 1});
  spec.weights = memory::desc({K, N}, dt::f32, tb ? memory::dims{1, K} : memory::dims{N, 1});
  spec.dst = dense({M, N});
  const Tensor* bc = constant_input(r, 1);
  std::vector<float> scaled_b;
  float alpha_left = alpha;
  if (bc) {
    if (alpha != 1.f) {
      const float* p = bc->data<float>();
      scaled_b.assign(p, p + bc->numel());
      for (auto& v : scaled_b) v *= alpha;
      spec.const_weights = scaled_b.data();
    } else {
      spec.const_weights = bc->data<float>();
    }
    alpha_left = 1.f;
  }

  bool c_runtime = false;
  std::vector<float> c_const, bias;
  std::string epilogue;
  const bool has_c = has_input(r, 2) && beta != 0.f;
  if (has_c) {
    if (!input_is(r, 2, DType::Float32) || r.inputs[2].dims.size() > 2) return nullptr;
    Dims c = r.inputs[2].dims;
    c.insert(c.begin(), 2 - c.size(), 1);
    if ((c[0] != 1 && c[0] != M) || (c[1] != 1 && c[1] != N)) return nullptr;
    const Tensor* cc = constant_input(r, 2);
    if (cc && c[0] == 1 && alpha_left == 1.f) {  // constant row vector: a bias
      const float* p = cc->data<float>();
      bias.resize(static_cast<size_t>(N));
      for (int64_t j = 0; j < N; ++j) bias[static_cast<size_t>(j)] = beta * p[c[1] == 1 ? 0 : j];
      spec.bias = dense({1, N});
      spec.const_bias = bias.data();
      epilogue = "_bias";
    } else {
      // dst = alpha * AB + (beta * C). A runtime C needs beta == 1: longer post-op chains
      // (linear, add, linear) give wrong results in oneDNN 2.6's gemm:jit matmul.
      if (!cc && beta != 1.f) return nullptr;
      int idx = 0;
      if (alpha_left != 1.f) {
        spec.post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, alpha_left, 0.f);
        ++idx;
      }
      spec.binary_mds.push_back(dense({c[0], c[1]}));
      spec.binary_indices.push_back(idx);
      spec.post_ops.append_binary(dnnl::algorithm::binary_add, spec.binary_mds.back());
      if (cc) {
        const float* p = cc->data<float>();
        c_const.assign(p, p + cc->numel());
        for (auto& v : c_const) v *= beta;
      } else {
        c_runtime = true;
      }
      epilogue = "_addc";
    }
  } else if (alpha_left != 1.f) {
    spec.post_ops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, alpha_left, 0.f);
  }
  try {
    OnednnMatmul m(std::move(spec));
    std::string name = "gemm_f32" + epilogue + m.name_suffix();
    return std::make_unique<GemmKernel>(std::move(m), c_runtime, std::move(c_const), name);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
