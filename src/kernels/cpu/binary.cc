// Broadcasting binary float32 kernels (Add Sub Mul Div Pow, and Min Max PRelu of two operands).
//
// Why the decomposition: real models broadcast along whole trailing blocks ([B,S,384] + [384],
// [B,S,384] / [B,S,1], [B,1,1,S] + [B,H,S,S]). At build time we drop size-1 output dims, merge
// adjacent dims where each operand is either present or broadcast in both, and split the result
// into an innermost run (each operand contiguous or a per-row scalar) and outer rows whose
// operand offsets come from an odometer. The run is vectorised; rows go to OpenMP threads.
#include <cmath>
#include <cstring>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/cpu/common.h"
#include "kernels/cpu/dense_layout.h"
#include "kernels/cpu/factories.h"
#include "kernels/cpu/binary_ops.h"
#include "kernels/cpu/simd.h"

namespace fusor::cpu {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

enum class BinOp { Add, Sub, Mul, Div, Pow, Square, PowGeneric, Min, Max, PRelu };

template <BinOp kOp>
HWY_INLINE V apply(V a, V b) {
  if constexpr (kOp == BinOp::Add) return hn::Add(a, b);
  if constexpr (kOp == BinOp::Sub) return hn::Sub(a, b);
  if constexpr (kOp == BinOp::Mul) return hn::Mul(a, b);
  if constexpr (kOp == BinOp::Div) return hn::Div(a, b);
  if constexpr (kOp == BinOp::Square) return hn::Mul(a, a);
  if constexpr (kOp == BinOp::Min) return binary_ops::MinOp::apply(a, b);
  if constexpr (kOp == BinOp::Max) return binary_ops::MaxOp::apply(a, b);
  if constexpr (kOp == BinOp::PRelu) return binary_ops::PReluOp::apply(a, b);
  return a;
}

using RunFn = void (*)(const float*, const float*, float*, int64_t);

template <BinOp kOp, bool kAS, bool kBS>
void run_vec(const float* a, const float* b, float* z, int64_t n) {
  simd::map2<kAS, kBS>(a, b, z, n, [](V x, V y) { return apply<kOp>(x, y); });
}

template <bool kAS, bool kBS>
void run_pow(const float* a, const float* b, float* z, int64_t n) {
  for (int64_t i = 0; i < n; ++i) z[i] = std::pow(a[kAS ? 0 : i], b[kBS ? 0 : i]);
}

template <BinOp kOp>
RunFn pick(bool as, bool bs) {
  if constexpr (kOp == BinOp::PowGeneric) {
    if (as) return bs ? run_pow<true, true> : run_pow<true, false>;
    return bs ? run_pow<false, true> : run_pow<false, false>;
  } else {
    if (as) return bs ? run_vec<kOp, true, true> : run_vec<kOp, true, false>;
    return bs ? run_vec<kOp, false, true> : run_vec<kOp, false, false>;
  }
}

struct Layout {
  // Outer dims (outermost first) and each operand's element stride along them.
  std::vector<int64_t> outer, a_stride, b_stride;
  int64_t inner = 1;     // length of the vectorised run
  bool a_scalar = false;  // operand is constant along the run
  bool b_scalar = false;
  int64_t rows = 1;
};

Layout plan_layout(const Dims& a_in, const Dims& b_in, const Dims& out) {
  const size_t r = out.size();
  Dims a(r, 1), b(r, 1);
  std::copy(a_in.begin(), a_in.end(), a.begin() + static_cast<long>(r - a_in.size()));
  std::copy(b_in.begin(), b_in.end(), b.begin() + static_cast<long>(r - b_in.size()));
  // Merged dims: size and whether each operand is broadcast along it.
  struct M { int64_t size; bool ab, bb; };
  std::vector<M> dims;
  for (size_t i = 0; i < r; ++i) {
    if (out[i] == 1) continue;
    M m{out[i], a[i] == 1, b[i] == 1};
    if (!dims.empty() && dims.back().ab == m.ab && dims.back().bb == m.bb) dims.back().size *= m.size;
    else dims.push_back(m);
  }
  Layout l;
  if (dims.empty()) {  // a single element
    l.a_scalar = l.b_scalar = true;
    return l;
  }
  l.inner = dims.back().size;
  l.a_scalar = dims.back().ab;
  l.b_scalar = dims.back().bb;
  int64_t as = l.a_scalar ? 1 : l.inner, bs = l.b_scalar ? 1 : l.inner;
  // Strides of the outer merged dims, innermost first while accumulating.
  for (size_t i = dims.size() - 1; i-- > 0;) {
    l.outer.insert(l.outer.begin(), dims[i].size);
    l.a_stride.insert(l.a_stride.begin(), dims[i].ab ? 0 : as);
    l.b_stride.insert(l.b_stride.begin(), dims[i].bb ? 0 : bs);
    if (!dims[i].ab) as *= dims[i].size;
    if (!dims[i].bb) bs *= dims[i].size;
    l.rows *= dims[i].size;
  }
  return l;
}

// The function for `op` over `l`'s run (nullptr for an op this kernel does not run).
RunFn run_fn(Op op, const Layout& l) {
  switch (op) {
    case Op::Add: return pick<BinOp::Add>(l.a_scalar, l.b_scalar);
    case Op::Sub: return pick<BinOp::Sub>(l.a_scalar, l.b_scalar);
    case Op::Mul: return pick<BinOp::Mul>(l.a_scalar, l.b_scalar);
    case Op::Div: return pick<BinOp::Div>(l.a_scalar, l.b_scalar);
    case Op::Pow: return pick<BinOp::PowGeneric>(l.a_scalar, l.b_scalar);
    case Op::Min: return pick<BinOp::Min>(l.a_scalar, l.b_scalar);
    case Op::Max: return pick<BinOp::Max>(l.a_scalar, l.b_scalar);
    case Op::PRelu: return pick<BinOp::PRelu>(l.a_scalar, l.b_scalar);
    default: return nullptr;
  }
}

class BinaryKernel final : public FollowsDenseLayout {
 public:
  BinaryKernel(Op op, Dims a, Dims b, Dims out, std::string name)
      : op_(op), a_(std::move(a)), b_(std::move(b)), out_(std::move(out)), name_(std::move(name)) {
    l_ = plan_layout(a_, b_, out_);
    fn_ = run_fn(op_, l_);
  }

  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* a = in[0].data<float>();
    const float* b = in[1].data<float>();
    float* z = out[0].data<float>();
    const int64_t inner = l_.inner;
    if (out[0].numel() == 0) return;  // its odometer would divide by a zero outer dim
    if (l_.rows == 1) {  // one run: split it across threads
      parallel_range(inner, inner, 64, [&](int64_t s, int64_t e) {
        fn_(a + (l_.a_scalar ? 0 : s), b + (l_.b_scalar ? 0 : s), z + s, e - s);
      });
      return;
    }
    parallel_range(l_.rows, l_.rows * inner, 1, [&](int64_t s, int64_t e) {
      const size_t nd = l_.outer.size();
      std::vector<int64_t> idx(nd);
      int64_t rem = s, ao = 0, bo = 0;
      for (size_t k = nd; k-- > 0;) {
        idx[k] = rem % l_.outer[k];
        rem /= l_.outer[k];
        ao += idx[k] * l_.a_stride[k];
        bo += idx[k] * l_.b_stride[k];
      }
      for (int64_t row = s; row < e; ++row) {
        fn_(a + ao, b + bo, z + row * inner, inner);
        for (size_t k = nd; k-- > 0;) {  // odometer step
          ao += l_.a_stride[k];
          bo += l_.b_stride[k];
          if (++idx[k] < l_.outer[k]) break;
          ao -= l_.a_stride[k] * l_.outer[k];
          bo -= l_.b_stride[k] * l_.outer[k];
          idx[k] = 0;
        }
      }
    });
  }
  std::string name() const override { return name_; }

  // In a dense layout it runs on the dims in storage order: an operand of the output's shape
  // arrives in it, the other must read alike (a per-channel scale under channels-last).
  bool follows_layout(const std::string& layout) const override {
    auto order = dense_layout_order(layout);
    if (!order || order->size() != out_.size()) return false;
    for (const Dims* d : {&a_, &b_})
      if (*d != out_ && !reads_alike(*d, *order)) return false;
    return true;
  }
  void use_layouts(std::span<const std::string> inputs, bool output_blocked) override {
    if (!output_blocked) return;
    order_ = *dense_layout_order(inputs[0].empty() ? inputs[1] : inputs[0]);
    l_ = plan_layout(dims_in_order(a_, order_), dims_in_order(b_, order_), dims_in_order(out_, order_));
    fn_ = run_fn(op_, l_);
  }

 private:
  Op op_;
  Dims a_, b_, out_;  // as bound, row-major
  Layout l_;
  RunFn fn_ = nullptr;
  std::string name_;
};

// x ^ c for a scalar constant c, as a unary program on x.
class PowScalarKernel final : public Kernel {
 public:
  PowScalarKernel(float c, std::string name) : c_(c), name_(std::move(name)) {}
  void run(std::span<const Tensor> in, std::span<Tensor> out, std::span<std::byte> scratch) override {
    const float* x = in[0].data<float>();
    float* y = out[0].data<float>();
    const int64_t n = in[0].numel();
    const float c = c_;
    parallel_range(n, n, 64, [&](int64_t s, int64_t e) {
      if (c == 2.f) simd::map1(x + s, y + s, e - s, [](V v) { return hn::Mul(v, v); });
      else if (c == 3.f) simd::map1(x + s, y + s, e - s, [](V v) { return hn::Mul(hn::Mul(v, v), v); });
      else if (c == 1.f) std::memcpy(y + s, x + s, static_cast<size_t>(e - s) * sizeof(float));
      else if (c == 0.5f) simd::map1(x + s, y + s, e - s, [](V v) { return hn::Sqrt(v); });
      else if (c == -1.f) simd::map1(x + s, y + s, e - s, [](V v) { return hn::Div(hn::Set(D(), 1.f), v); });
      else for (int64_t i = s; i < e; ++i) y[i] = std::pow(x[i], c);
    });
  }
  std::string name() const override { return name_; }

 private:
  float c_;
  std::string name_;
};

}  // namespace

std::unique_ptr<Kernel> make_binary_kernel(const KernelRequest& r) {
  const Node& n = r.node;
  if (r.inputs.size() != 2 || !input_is(r, 0, DType::Float32) || used_outputs(r) != 1 ||
      r.outputs[0].dtype != DType::Float32)
    return nullptr;
  const Dims& out = r.outputs[0].dims;
  const Dims& a = r.inputs[0].dims;
  const Dims& b = r.inputs[1].dims;
  if (a.size() > out.size() || b.size() > out.size()) return nullptr;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != 1 && a[i] != out[out.size() - a.size() + i]) return nullptr;
  for (size_t i = 0; i < b.size(); ++i)
    if (b[i] != 1 && b[i] != out[out.size() - b.size() + i]) return nullptr;

  if (n.op == Op::Pow) {
    // Exponent: a float32 tensor, or a scalar constant of any numeric type.
    const Tensor* e = constant_input(r, 1);
    if (e && e->numel() == 1 && a == out) {
      float c = static_cast<float>(e->scalar_as_double());
      std::string tag = c == 2.f ? "square" : c == 0.5f ? "sqrt" : c == 3.f ? "cube" : c == -1.f ? "recip" : "scalar";
      return std::make_unique<PowScalarKernel>(c, std::string("pow_") + tag + "_f32_" + kIsa);
    }
    if (!input_is(r, 1, DType::Float32)) return nullptr;
  } else if (!input_is(r, 1, DType::Float32)) {
    return nullptr;
  }

  const char* op = n.op == Op::Add   ? "add"
                   : n.op == Op::Sub ? "sub"
                   : n.op == Op::Mul ? "mul"
                   : n.op == Op::Div ? "div"
                   : n.op == Op::Pow ? "pow"
                   : n.op == Op::Min ? "min"
                   : n.op == Op::Max ? "max"
                   : n.op == Op::PRelu ? "prelu"
                                     : nullptr;
  if (!op) return nullptr;
  const Layout l = plan_layout(a, b, out);
  std::string kind = l.rows == 1 && !l.a_scalar && !l.b_scalar ? "" : "_bcast";
  return std::make_unique<BinaryKernel>(n.op, a, b, out, std::string(op) + kind + "_f32_" + kIsa);
}

}  // namespace fusor::cpu
