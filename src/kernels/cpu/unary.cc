// Elementwise unary float32 kernels (Highway, static dispatch): every row of the elementwise
// table runs its SIMD functor (unary_ops.h), split over OpenMP threads for large tensors.
// Identity and inference-mode Dropout are a copy of any dtype.
#include <cctype>
#include <cstring>
#include <string>

#include "kernels/cpu/common.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/unary_ops.h"

namespace fusor::cpu {
namespace {

using simd::V;
using unary_ops::Params;
using UnaryFn = void (*)(const float*, float*, int64_t, const Params&);

class UnaryKernel final : public FollowsDenseLayout {
 public:
  UnaryKernel(UnaryFn fn, Params p, std::string name) : fn_(fn), p_(p), name_(std::move(name)) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    const int64_t n = in[0].numel();
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) { fn_(x + b, y + b, e - b, p_); });
  }
  std::string name() const override { return name_; }
  // Element i of the output reads element i of the input, whatever order the bytes are in.
  bool follows_layout(const std::string& layout) const override { return dense_layout_order(layout).has_value(); }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    if (output_blocked && !inputs.empty()) order_ = *dense_layout_order(inputs[0]);
  }

 private:
  UnaryFn fn_;
  Params p_;
  std::string name_;
};

class CopyKernel final : public Kernel {
 public:
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    if (in[0].raw() == out[0].raw()) return;
    const auto* x = static_cast<const char*>(in[0].raw());
    auto* y = static_cast<char*>(out[0].raw());
    const int64_t n = static_cast<int64_t>(in[0].nbytes());
    parallel_range(n, n / 4, 256, [&](int64_t b, int64_t e) { std::memcpy(y + b, x + b, static_cast<size_t>(e - b)); });
  }
  std::string name() const override { return "copy_memcpy"; }
};

std::unique_ptr<Kernel> make_copy_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (r.inputs.empty() || r.outputs.empty() || used_outputs(r) > 1) return nullptr;
  if (n.op == Op::Dropout && has_input(r, 2)) {  // training_mode must be a constant false
    const Tensor* t = constant_input(r, 2);
    if (!t || t->scalar_as_double() != 0.0) return nullptr;
  }
  if (r.outputs[0].dtype != r.inputs[0].dtype || numel_of(r.outputs[0].dims) != numel_of(r.inputs[0].dims))
    return nullptr;
  return std::make_unique<CopyKernel>();
}

// "<op>[_<variant>]_f32_<isa>", e.g. relu_f32_avx2, gelu_tanh_f32_avx512.
std::string kernel_name(Op op, const UnaryParams& p) {
  std::string name = op_info(op).name;
  for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!p.variant_name.empty()) name.append("_").append(p.variant_name);
  return name.append("_f32_").append(kIsa);
}

}  // namespace

std::unique_ptr<Kernel> make_unary_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (n.op == Op::Identity || n.op == Op::Dropout) return make_copy_kernel(r);
  if (!is_unary_table_op(n.op) || !input_is(r, 0, DType::Float32) || used_outputs(r) != 1 ||
      r.outputs[0].dtype != DType::Float32 || r.outputs[0].dims != r.inputs[0].dims)
    return nullptr;
  const std::optional<UnaryParams> params = unary_params(n, r.inputs, r.constants);
  if (!params) return nullptr;  // a Clip bound known only at run time
  UnaryFn fn = unary_ops::with_functor<UnaryFn>(n.op, params->variant, []<class F>() -> UnaryFn {
    return [](const float* x, float* y, int64_t count, const Params& p) {
      simd::map1(x, y, count, [&](V v) { return F::apply(v, p); });
    };
  });
  if (!fn) return nullptr;
  return std::make_unique<UnaryKernel>(fn, unary_ops::simd_params(*params), kernel_name(n.op, *params));
}

}  // namespace fusor::cpu
