// MatMulInteger on oneDNN's int8 matmul: u8 or s8 activations (A, rows collapsed into M) against
// constant s8 weights (B, 2-D) packed once, int32 out, exact. A's zero point (a scalar, constant or
// from DynamicQuantizeLinear at run time) is a runtime zero-point attribute. B's zero point must be
// absent or all zeros (symmetric weights, what ONNX Runtime's quantizers emit for s8); anything
// else, u8 weights (oneDNN 2.6 has no u8 weights) or a per-row A zero point runs the reference.
// Without VNNI, weights whose products would saturate vpmaddubsw are declined (int8_support.h).
#include <oneapi/dnnl/dnnl.hpp>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/int8_support.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/packed_weights.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

class MatmulIntegerKernel final : public Kernel {
 public:
  MatmulIntegerKernel(int64_t rows, int64_t K, int64_t N, bool a_signed, bool a_has_zp, const Tensor& b)
      : a_has_zp_(a_has_zp) {
    const dt a_type = a_signed ? dt::s8 : dt::u8;
    const memory::desc src({rows, K}, a_type, tag::ab), dst({rows, N}, dt::s32, tag::ab);
    const memory::desc wei_plain({K, N}, dt::s8, tag::ab), wei_any({K, N}, dt::s8, tag::any);
    std::string key = "matmul_int|" + onednn::md_key(src) + "|" + onednn::md_key(wei_any) + "|" + onednn::md_key(dst) +
                      (a_has_zp ? "|zp" : "");
    entry_ = onednn::cached_as<Entry>(key, [&] {
      dnnl::primitive_attr attr;
      if (a_has_zp) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      auto e = std::make_shared<Entry>();
      e->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wei_any, dst), attr, onednn::engine());
      e->prim = dnnl::matmul(e->pd);
      return e;
    });
    packed_ = packed_weights(b.raw(), wei_plain, entry_->pd.weights_desc());
    auto& eng = onednn::engine();
    src_mem_ = memory(src, eng, DNNL_MEMORY_NONE);
    dst_mem_ = memory(dst, eng, DNNL_MEMORY_NONE);
    scratch_mem_ = memory(entry_->pd.scratchpad_desc(), eng, DNNL_MEMORY_NONE);
    zp_mem_ = memory(memory::desc({1}, dt::s32, tag::a), eng, &zp_);
    args_ = {{DNNL_ARG_SRC, src_mem_}, {DNNL_ARG_WEIGHTS, packed_->memory()}, {DNNL_ARG_DST, dst_mem_},
             {DNNL_ARG_SCRATCHPAD, scratch_mem_}};
    if (a_has_zp) args_.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_mem_);
    arg_list_ = onednn::arg_list(args_);
    name_ = std::string("matmul_integer_") + (a_signed ? "s8" : "u8") + "s8_onednn_packed";
  }

  size_t scratch_bytes() const override { return entry_->pd.scratchpad_desc().get_size(); }
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    if (a_has_zp_) zp_ = static_cast<int32_t>(in[2].scalar_as_double(0));
    src_mem_.set_data_handle(const_cast<void*>(in[0].raw()));
    dst_mem_.set_data_handle(out[0].raw());
    scratch_mem_.set_data_handle(scratch.data());
    onednn::execute(entry_->prim, arg_list_);
    onednn::stream().wait();
  }
  std::string name() const override { return name_; }
  bool uses_openmp() const override { return true; }

 private:
  struct Entry {
    dnnl::matmul::primitive_desc pd;
    dnnl::matmul prim;
  };
  bool a_has_zp_;
  int32_t zp_ = 0;
  std::shared_ptr<Entry> entry_;
  std::shared_ptr<const PackedWeights> packed_;
  memory src_mem_, dst_mem_, scratch_mem_, zp_mem_;
  std::unordered_map<int, memory> args_;
  onednn::ArgList arg_list_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_integer_kernel(const KernelRequest& r) {
  const auto ops = int8_operands(r, Op::MatMulInteger);
  const Dims& a_dims = r.inputs[0].dims;
  if (!ops || ops->weights->rank() != 2 || a_dims.size() < 2) return nullptr;
  const Tensor* b = ops->weights;
  const bool a_signed = ops->activations_signed, a_has_zp = ops->has_zero_point;
  const int64_t K = b->dim(0), N = b->dim(1);
  if (a_dims.back() != K || K == 0 || N == 0 || numel_of(a_dims) == 0) return nullptr;
  if (!onednn_int8_has_vnni() && int8_weights_may_saturate(b->data<int8_t>(), 1, K, N)) return nullptr;
  try {
    return std::make_unique<MatmulIntegerKernel>(numel_of(a_dims) / K, K, N, a_signed, a_has_zp, *b);
  } catch (const dnnl::error&) {
    return nullptr;
  }
}

}  // namespace fusor::cpu
