#include "kernels/cpu/gemm_epilogue.h"

#include "kernels/cpu/unary_ops.h"

namespace fusor::cpu {
namespace {

using dnnl::memory;
using simd::D;
using simd::V;
namespace hn = simd::hn;

bool known_eltwise(dnnl::algorithm a) {
  using A = dnnl::algorithm;
  for (A k : {A::eltwise_relu, A::eltwise_tanh, A::eltwise_logistic, A::eltwise_swish, A::eltwise_gelu_erf,
              A::eltwise_gelu_tanh, A::eltwise_hardswish, A::eltwise_linear})
    if (a == k) return true;
  return false;
}

}  // namespace

bool dense_rows(const memory::desc& md, int64_t rows, int64_t cols) {
  if (md.data_type() != memory::data_type::f32 || md.data.format_kind != dnnl_blocked || md.data.ndims != 2) return false;
  const auto& b = md.data.format_desc.blocking;
  return md.dims()[0] == rows && md.dims()[1] == cols && b.inner_nblks == 0 && b.strides[1] == 1 &&
         (rows == 1 || b.strides[0] == cols);
}

std::optional<GemmEpilogue> GemmEpilogue::make(const dnnl::post_ops& post_ops, int64_t m, int64_t n, bool has_bias) {
  GemmEpilogue e;
  e.bias_ = has_bias;
  for (int i = 0; i < post_ops.len(); ++i) {
    Step s;
    if (post_ops.kind(i) == dnnl::primitive::kind::eltwise) {
      post_ops.get_params_eltwise(i, s.scale, s.alg, s.alpha, s.beta);
      if (!known_eltwise(s.alg)) return std::nullopt;
    } else if (post_ops.kind(i) == dnnl::primitive::kind::binary) {
      memory::desc src1;
      post_ops.get_params_binary(i, s.alg, src1);
      if (s.alg != dnnl::algorithm::binary_add || !(dense_rows(src1, 1, n) || dense_rows(src1, m, n)))
        return std::nullopt;
      s.add = true;
      s.row_stride = src1.dims()[0] == 1 ? 0 : n;
    } else {
      return std::nullopt;
    }
    e.steps_.push_back(s);
  }
  return e;
}

// The same op on n vectors: one switch, then a loop the op is inlined into.
void GemmEpilogue::eltwise_all(const Step& s, V* v, int n) {
  using A = dnnl::algorithm;
  namespace u = unary_ops;
  const D d;
  const u::Params p{.alpha = s.alpha};
  auto each = [&](auto op) {
    for (int i = 0; i < n; ++i) v[i] = s.scale == 1.f ? op(v[i]) : hn::Mul(op(v[i]), hn::Set(d, s.scale));
  };
  switch (s.alg) {
    case A::eltwise_gelu_erf: return each([&](V x) { return u::GeluErfOp::apply(x, p); });
    case A::eltwise_relu:
      if (s.alpha == 0.f) return each([&](V x) { return u::ReluOp::apply(x, p); });
      break;
    default: break;
  }
  for (int i = 0; i < n; ++i) v[i] = eltwise(s, v[i]);
}

// One eltwise post-op, as oneDNN 2.6 defines it, with the elementwise table's formulas.
V GemmEpilogue::eltwise(const Step& s, V v) {
  using A = dnnl::algorithm;
  namespace u = unary_ops;
  const D d;
  const u::Params p{.alpha = s.alpha};
  V r;
  switch (s.alg) {
    case A::eltwise_relu: r = s.alpha == 0.f ? u::ReluOp::apply(v, p) : u::LeakyReluOp::apply(v, p); break;
    case A::eltwise_tanh: r = u::TanhOp::apply(v, p); break;
    case A::eltwise_logistic: r = u::SigmoidOp::apply(v, p); break;
    case A::eltwise_swish: r = hn::Mul(v, u::SigmoidOp::apply(hn::Mul(v, hn::Set(d, s.alpha)), p)); break;
    case A::eltwise_gelu_erf: r = u::GeluErfOp::apply(v, p); break;
    case A::eltwise_gelu_tanh: r = u::GeluTanhOp::apply(v, p); break;
    case A::eltwise_hardswish: r = u::HardSwishOp::apply(v, p); break;  // x * relu6(x + 3) / 6
    default: r = hn::MulAdd(v, hn::Set(d, s.alpha), hn::Set(d, s.beta)); break;  // eltwise_linear
  }
  return s.scale == 1.f ? r : hn::Mul(r, hn::Set(d, s.scale));
}

}  // namespace fusor::cpu
