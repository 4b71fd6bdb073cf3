// Elementwise unary float32 kernels (Highway, static dispatch), split over OpenMP threads for
// large tensors. Identity and inference-mode Dropout are a copy of any dtype.
#include <cstring>
#include <string>

#include "kernels/cpu/common.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/unary_ops.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

using namespace unary_ops;  // the formulas: ReluOp, GeluErfOp, ..., Params
using UnaryFn = void (*)(const float*, float*, int64_t, const Params&);

template <class F>
UnaryFn wrap() {
  return [](const float* x, float* y, int64_t n, const Params& p) {
    simd::map1(x, y, n, [&](V v) { return F::apply(v, p); });
  };
}

class UnaryKernel final : public Kernel {
 public:
  UnaryKernel(UnaryFn fn, Params p, std::string name) : fn_(fn), p_(p), name_(std::move(name)) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    const int64_t n = in[0].numel();
    parallel_range(n, n, 64, [&](int64_t b, int64_t e) { fn_(x + b, y + b, e - b, p_); });
  }
  std::string name() const override { return name_; }

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

bool scalar_constant(const KernelRequest& r, size_t i, float& v) {
  if (!has_input(r, i)) return true;  // omitted: keep the default
  const Tensor* t = constant_input(r, i);
  if (!t || t->numel() != 1) return false;
  v = static_cast<float>(t->scalar_as_double());
  return true;
}

}  // namespace

std::unique_ptr<Kernel> make_unary_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (n.op == Op::Identity || n.op == Op::Dropout) {
    if (r.inputs.empty() || r.outputs.empty() || used_outputs(r) > 1) return nullptr;
    if (n.op == Op::Dropout && has_input(r, 2)) {  // training_mode must be a constant false
      const Tensor* t = constant_input(r, 2);
      if (!t || t->scalar_as_double() != 0.0) return nullptr;
    }
    if (r.outputs[0].dtype != r.inputs[0].dtype || numel_of(r.outputs[0].dims) != numel_of(r.inputs[0].dims))
      return nullptr;
    return std::make_unique<CopyKernel>();
  }
  if (!input_is(r, 0, DType::Float32) || used_outputs(r) != 1 || r.outputs[0].dtype != DType::Float32 ||
      r.outputs[0].dims != r.inputs[0].dims)
    return nullptr;
  Params p;
  UnaryFn fn = nullptr;
  std::string op = op_info(n.op).name;
  for (auto& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  switch (n.op) {
    case Op::Relu: fn = wrap<ReluOp>(); break;
    case Op::Neg: fn = wrap<NegOp>(); break;
    case Op::Abs: fn = wrap<AbsOp>(); break;
    case Op::Sqrt: fn = wrap<SqrtOp>(); break;
    case Op::Reciprocal: fn = wrap<ReciprocalOp>(); break;
    case Op::Exp: fn = wrap<ExpOp>(); break;
    case Op::Log: fn = wrap<LogOp>(); break;
    case Op::Sigmoid: fn = wrap<SigmoidOp>(); break;
    case Op::Tanh: fn = wrap<TanhOp>(); break;
    case Op::Erf: fn = wrap<ErfOp>(); break;
    case Op::LeakyRelu: p.alpha = n.attr_float("alpha", 0.01f); fn = wrap<LeakyReluOp>(); break;
    case Op::HardSigmoid:
      p.alpha = n.attr_float("alpha", 0.2f);
      p.beta = n.attr_float("beta", 0.5f);
      fn = wrap<HardSigmoidOp>();
      break;
    case Op::HardSwish: fn = wrap<HardSwishOp>(); break;
    case Op::Gelu: {
      std::string approx = n.attr_string("approximate", "none");
      if (approx == "none") fn = wrap<GeluErfOp>();
      else if (approx == "tanh") { fn = wrap<GeluTanhOp>(); op = "gelu_tanh"; }
      else return nullptr;
      break;
    }
    case Op::Clip:
      p.lo = -std::numeric_limits<float>::infinity();
      p.hi = std::numeric_limits<float>::infinity();
      if (n.opset < 11) {
        p.lo = n.attr_float("min", p.lo);
        p.hi = n.attr_float("max", p.hi);
      } else if (!scalar_constant(r, 1, p.lo) || !scalar_constant(r, 2, p.hi)) {
        return nullptr;
      }
      fn = wrap<ClipOp>();
      break;
    default: return nullptr;
  }
  return std::make_unique<UnaryKernel>(fn, p, op + "_f32_" + kIsa);
}

}  // namespace fusor::cpu
