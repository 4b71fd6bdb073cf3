#include "kernels/cpu/fused_elementwise_program.h"

#include <cmath>
#include <cstring>
#include <optional>

#include "ir/bind.h"
#include "ir/elementwise.h"
#include "kernels/cpu/binary_ops.h"
#include "kernels/cpu/quantize_simd.h"
#include "kernels/ref/reference.h"
#include "passes/fused_elementwise_ops.h"
#include "passes/fused_kinds.h"

namespace fusor::cpu::ew {
namespace {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// ---- instruction bodies -------------------------------------------------------------------

template <class F>
void unary(const float* const* in, float* out, int64_t n, const Params& p) {
  simd::map1(in[0], out, n, [&](V v) { return F::apply(v, p); });
}

struct CopyOp {
  static HWY_INLINE V apply(V x, const Params&) { return x; }
};
struct NotOp {
  static HWY_INLINE V apply(V x, const Params&) { return hn::IfThenElseZero(hn::Eq(x, hn::Zero(D())), hn::Set(D(), 1.f)); }
};
struct ToBoolOp {  // !(x == 0), so NaN is true as in the reference Cast (hn::Ne is ordered)
  static HWY_INLINE V apply(V x, const Params&) { return hn::IfThenZeroElse(hn::Eq(x, hn::Zero(D())), hn::Set(D(), 1.f)); }
};

// (x - zero point) * scale, as DequantizeLinear's kernels compute it.
void dequantize(const float* const* in, float* out, int64_t n, const Params& p) {
  const V scale = hn::Set(D(), p.alpha), zero_point = hn::Set(D(), p.beta);
  simd::map1(in[0], out, n, [&](V v) { return hn::Mul(hn::Sub(v, zero_point), scale); });
}

// round_half_even(x / scale) + zero point, clamped to [lo, hi], NaN to 0: QuantizeLinear's
// float32 operations in its kernels' order, so the integer is theirs.
void quantize(const float* const* in, float* out, int64_t n, const Params& p) {
  const D d;
  const V scale = hn::Set(d, p.alpha), zero_point = hn::Set(d, p.beta), lo = hn::Set(d, p.lo), hi = hn::Set(d, p.hi);
  simd::map1(in[0], out, n, [&](V x) { return simd::quantize(x, scale, zero_point, lo, hi); });
}

// x ^ c for a constant c: the exponents models use are plain arithmetic, the rest std::pow.
void pow_const(const float* const* in, float* out, int64_t n, const Params& p) {
  const float c = p.alpha;
  const float* x = in[0];
  if (c == 2.f) simd::map1(x, out, n, [](V v) { return hn::Mul(v, v); });
  else if (c == 3.f) simd::map1(x, out, n, [](V v) { return hn::Mul(hn::Mul(v, v), v); });
  else if (c == 1.f) simd::map1(x, out, n, [](V v) { return v; });
  else if (c == 0.5f) simd::map1(x, out, n, [](V v) { return hn::Sqrt(v); });
  else if (c == -1.f) simd::map1(x, out, n, [](V v) { return hn::Div(hn::Set(D(), 1.f), v); });
  else for (int64_t i = 0; i < n; ++i) out[i] = std::pow(x[i], c);
}

#define FUSOR_BINARY(Name, expr)                    \
  struct Name##Op {                                 \
    static HWY_INLINE V apply(V a, V b) {           \
      const D d;                                    \
      (void)d;                                      \
      return expr;                                  \
    }                                               \
  };
FUSOR_BINARY(Add, hn::Add(a, b))
FUSOR_BINARY(Sub, hn::Sub(a, b))
FUSOR_BINARY(Mul, hn::Mul(a, b))
FUSOR_BINARY(Div, hn::Div(a, b))
FUSOR_BINARY(Equal, hn::IfThenElseZero(hn::Eq(a, b), hn::Set(d, 1.f)))
FUSOR_BINARY(Greater, hn::IfThenElseZero(hn::Gt(a, b), hn::Set(d, 1.f)))
FUSOR_BINARY(Less, hn::IfThenElseZero(hn::Lt(a, b), hn::Set(d, 1.f)))
FUSOR_BINARY(GreaterOrEqual, hn::IfThenElseZero(hn::Ge(a, b), hn::Set(d, 1.f)))
FUSOR_BINARY(LessOrEqual, hn::IfThenElseZero(hn::Le(a, b), hn::Set(d, 1.f)))
#undef FUSOR_BINARY

template <class F, bool kAS, bool kBS>
void binary(const float* const* in, float* out, int64_t n, const Params&) {
  simd::map2<kAS, kBS>(in[0], in[1], out, n, [](V a, V b) { return F::apply(a, b); });
}

template <bool kAS, bool kBS>
void pow_tensor(const float* const* in, float* out, int64_t n, const Params&) {
  const float a0 = in[0][0], b0 = in[1][0];  // read first: `out` may share a scalar's buffer
  for (int64_t i = 0; i < n; ++i) out[i] = std::pow(kAS ? a0 : in[0][i], kBS ? b0 : in[1][i]);
}

// cond != 0 ? a : b; operand k is a scalar when bit k of kScalar is set.
template <int kScalar>
void where(const float* const* in, float* out, int64_t n, const Params&) {
  constexpr bool sc = kScalar & 1, sa = kScalar & 2, sb = kScalar & 4;
  const D d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  auto pick = [&](V c, V a, V b) { return hn::IfThenElse(hn::Ne(c, hn::Zero(d)), a, b); };
  const V c0 = hn::Set(d, in[0][0]), a0 = hn::Set(d, in[1][0]), b0 = hn::Set(d, in[2][0]);
  int64_t i = 0;
  for (; i + L <= n; i += L)
    hn::StoreU(pick(sc ? c0 : hn::LoadU(d, in[0] + i), sa ? a0 : hn::LoadU(d, in[1] + i),
                    sb ? b0 : hn::LoadU(d, in[2] + i)),
               d, out + i);
  if (i < n) {
    auto m = hn::FirstN(d, static_cast<size_t>(n - i));
    hn::BlendedStore(pick(sc ? c0 : hn::MaskedLoad(m, d, in[0] + i), sa ? a0 : hn::MaskedLoad(m, d, in[1] + i),
                          sb ? b0 : hn::MaskedLoad(m, d, in[2] + i)),
                     m, d, out + i);
  }
}

template <class F>
Fn pick_binary(bool as, bool bs) {
  if (as && bs) return binary<F, false, false>;  // a scalar result: run over one element
  if (as) return binary<F, true, false>;
  return bs ? binary<F, false, true> : binary<F, false, false>;
}

// ---- compiling a body -----------------------------------------------------------------------

// The instruction of a two-operand arithmetic op or comparison.
Code binary_code(Op op) {
  switch (op) {
    case Op::Add: return Code::Add;
    case Op::Sub: return Code::Sub;
    case Op::Mul: return Code::Mul;
    case Op::Div: return Code::Div;
    case Op::Min: return Code::Min;
    case Op::Max: return Code::Max;
    case Op::PRelu: return Code::PRelu;
    case Op::Equal: return Code::Equal;
    case Op::Greater: return Code::Greater;
    case Op::Less: return Code::Less;
    case Op::GreaterOrEqual: return Code::GreaterOrEqual;
    default: return Code::LessOrEqual;
  }
}

struct Compiler {
  const Graph& body;
  Binding b;
  Program p;
  std::vector<int> slot_of;
  std::vector<int> input_index;

  DType dtype(int v) const { return b.types[static_cast<size_t>(v)].dtype; }
  bool is(int v, DType t) const { return v >= 0 && dtype(v) == t; }
  bool float_or_bool(int v) const { return is(v, DType::Float32) || is(v, DType::Bool); }
  std::optional<float> scalar_constant(int v) const {
    if (v < 0 || !b.is_constant(v) || b.constants[static_cast<size_t>(v)].numel() != 1) return std::nullopt;
    return static_cast<float>(b.constants[static_cast<size_t>(v)].scalar_as_double());
  }
  int read(int v) {
    int& s = slot_of[static_cast<size_t>(v)];
    if (s < 0) {
      s = p.slots++;
      int k = input_index[static_cast<size_t>(v)];
      if (k < 0) throw Error("value '" + body.values[static_cast<size_t>(v)].name + "' is read before it is made");
      p.input_slot[static_cast<size_t>(k)] = s;
    }
    return s;
  }

  // One instruction for `n`, or the reason it has none.
  std::optional<std::string> add(const Node& n) {
    int out = n.outputs.empty() ? -1 : n.outputs[0];
    for (size_t o = 1; o < n.outputs.size(); ++o)
      if (n.outputs[o] >= 0) return n.describe() + " has a second output";
    if (out < 0) return n.describe() + " has no output";
    const auto& in = n.inputs;
    auto input = [&](size_t i) { return i < in.size() ? in[i] : -1; };
    Instr ins;
    auto operands = [&](std::initializer_list<int> vs) {
      for (int v : vs) ins.src[ins.nsrc++] = read(v);
    };
    Op op = n.op;
    if (op == Op::Fused) {
      if (!is_fused_kind(n, FusedKind::Gelu)) return n.describe() + " is a fused " + n.op_type + ", not an elementwise op";
      op = Op::Gelu;
    }
    if (!fused_elementwise_runs(n)) return n.describe() + " is not an elementwise op this kernel runs";
    const bool f_in = is(input(0), DType::Float32), f_out = is(out, DType::Float32);
    if (is_unary_table_op(op)) {
      if (!f_in || !f_out) return n.describe() + ": only float32 is supported";
      auto params = table_params(n, op);
      if (!params) return n.describe() + ": bounds must be scalar constants";
      ins.code = Code::Unary;
      ins.op = op;
      ins.p = unary_ops::simd_params(*params);
      operands({input(0)});
      return emit(n, out, ins);
    }
    switch (op) {
      case Op::DequantizeLinear:
      case Op::QuantizeLinear: {
        const bool dq = op == Op::DequantizeLinear;
        const DType q = dq ? dtype(input(0)) : dtype(out);
        if (q != DType::UInt8 && q != DType::Int8) return n.describe() + ": only uint8 and int8";
        if (dq ? !f_out : !f_in) return n.describe() + ": only float32";
        auto scale = scalar_constant(input(1));
        auto zero_point = input(2) >= 0 ? scalar_constant(input(2)) : std::optional<float>(0.f);
        if (!scale || !zero_point || n.attr_int("block_size", 0) != 0)
          return n.describe() + ": the scale and zero point are not per-tensor constants";
        ins.code = dq ? Code::Dequantize : Code::Quantize;
        ins.p.alpha = *scale;
        ins.p.beta = *zero_point;
        ins.p.lo = q == DType::Int8 ? -128.f : 0.f;
        ins.p.hi = q == DType::Int8 ? 127.f : 255.f;
        operands({input(0)});
        break;
      }
      case Op::Identity:
      case Op::Dropout:
        if (n.op == Op::Dropout && input(2) >= 0 && scalar_constant(input(2)).value_or(1.f) != 0.f)
          return n.describe() + ": training mode is not a constant false";
        if (!float_or_bool(input(0)) || dtype(out) != dtype(input(0))) return n.describe() + ": only float32 and bool";
        ins.code = Code::Copy;
        operands({input(0)});
        break;
      case Op::Not:
        if (!is(input(0), DType::Bool)) return n.describe() + ": input is not bool";
        ins.code = Code::Not;
        operands({input(0)});
        break;
      case Op::Cast: {
        DType from = input(0) >= 0 ? dtype(input(0)) : DType::Undefined;
        bool loadable = from == DType::Float32 || from == DType::Bool ||
                        ((from == DType::Int32 || from == DType::Int64) && input_index[static_cast<size_t>(input(0))] >= 0);
        if (!loadable) return n.describe() + ": casts from " + dtype_name(from) + " are not supported";
        if (is(out, DType::Float32) || (is(out, DType::Bool) && from == DType::Bool)) ins.code = Code::Copy;
        else if (is(out, DType::Bool)) ins.code = Code::ToBool;
        else return n.describe() + ": casts to " + dtype_name(dtype(out)) + " are not supported";
        operands({input(0)});
        break;
      }
      case Op::Pow:
        if (!f_in || !f_out) return n.describe() + ": only float32 bases are supported";
        if (auto c = scalar_constant(input(1))) {
          ins.code = Code::PowConst;
          ins.p.alpha = *c;
          operands({input(0)});
        } else if (is(input(1), DType::Float32)) {
          ins.code = Code::Pow;
          operands({input(0), input(1)});
        } else {
          return n.describe() + ": the exponent is neither float32 nor a scalar constant";
        }
        break;
      case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Min: case Op::Max: case Op::PRelu:
        if (!f_in || !f_out) return n.describe() + ": only float32 is supported";
        if (in.size() == 1) {  // Min or Max of one operand
          ins.code = Code::Copy;
          operands({input(0)});
          break;
        }
        if (!is(input(1), DType::Float32)) return n.describe() + ": only float32 is supported";
        ins.code = binary_code(op);
        operands({input(0), input(1)});
        break;
      case Op::Equal: case Op::Greater: case Op::Less: case Op::GreaterOrEqual: case Op::LessOrEqual: {
        bool both_float = f_in && is(input(1), DType::Float32);
        bool both_bool = op == Op::Equal && is(input(0), DType::Bool) && is(input(1), DType::Bool);
        if (!(both_float || both_bool) || !is(out, DType::Bool)) return n.describe() + ": only float32 operands";
        ins.code = binary_code(op);
        operands({input(0), input(1)});
        break;
      }
      case Op::Where:
        if (!is(input(0), DType::Bool) || !float_or_bool(input(1)) || dtype(input(2)) != dtype(input(1)) ||
            dtype(out) != dtype(input(1)))
          return n.describe() + ": only float32 or bool values";
        ins.code = Code::Where;
        operands({input(0), input(1), input(2)});
        break;
      default:
        return n.describe() + " is not an elementwise op this kernel runs";
    }
    return emit(n, out, ins);
  }

  // The parameters of table op `op` computed by body node `n` (a fused Gelu is op Gelu), from
  // the constants bound now.
  std::optional<UnaryParams> table_params(const Node& n, Op op) const {
    std::vector<TensorType> types;
    std::vector<const Tensor*> known;
    for (int v : n.inputs) {
      types.push_back(v >= 0 ? b.types[static_cast<size_t>(v)] : TensorType{});
      known.push_back(v >= 0 && b.is_constant(v) ? &b.constants[static_cast<size_t>(v)] : nullptr);
    }
    if (n.op == op) return unary_params(n, types, known);
    Node as_op = n;
    as_op.op = op;
    return unary_params(as_op, types, known);
  }

  // Appends `ins`, writing `out` into a new slot.
  std::optional<std::string> emit(const Node& n, int out, Instr ins) {
    if (slot_of[static_cast<size_t>(out)] >= 0) return n.describe() + " writes a value twice";
    ins.dst = slot_of[static_cast<size_t>(out)] = p.slots++;
    p.code.push_back(ins);
    return std::nullopt;
  }
};

}  // namespace

std::variant<Program, std::string> compile_program(const Node& fused, std::span<const TensorType> inputs,
                                                   std::span<const Tensor* const> constants) {
  if (!fused.body) return std::string("no body");
  const Graph& body = *fused.body;
  if (body.inputs.size() != inputs.size()) return std::string("body and node inputs differ");
  std::vector<Tensor> frozen;
  for (size_t i = 0; i < inputs.size(); ++i)
    frozen.push_back(i < constants.size() && constants[i] ? *constants[i] : Tensor());
  Compiler c{body, {}, {}, std::vector<int>(body.values.size(), -1), std::vector<int>(body.values.size(), -1)};
  try {
    c.b = bind_graph(body, inputs, frozen, ref::evaluate);
    c.p.input_slot.assign(inputs.size(), -1);
    for (size_t i = 0; i < inputs.size(); ++i) {
      c.input_index[static_cast<size_t>(body.inputs[i])] = static_cast<int>(i);
      c.p.input_dtype.push_back(inputs[i].dtype);
    }
    for (const Node& n : body.nodes)
      if (auto why = c.add(n)) return *why;
  } catch (const Error& e) {
    return std::string(e.what());
  }
  for (int v : body.outputs) {
    const int producer = body.values[static_cast<size_t>(v)].producer;
    const bool quantized = producer >= 0 && body.nodes[static_cast<size_t>(producer)].op == Op::QuantizeLinear;
    if (!c.is(v, DType::Float32) && !quantized)
      return "output '" + body.values[static_cast<size_t>(v)].name + "' is not float32";
    c.p.output_dtype.push_back(c.dtype(v));
    int s = c.slot_of[static_cast<size_t>(v)];
    if (s < 0 || c.input_index[static_cast<size_t>(v)] >= 0) return std::string("an output is not computed by the body");
    c.p.output_slot.push_back(s);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType t = inputs[i].dtype;
    bool loadable = t == DType::Float32 || t == DType::Bool || t == DType::Int32 || t == DType::Int64 ||
                    t == DType::UInt8 || t == DType::Int8;
    if (c.p.input_slot[i] >= 0 && !loadable) return std::string("input of dtype ") + dtype_name(t);
  }
  return std::move(c.p);
}

Fn select_fn(const Instr& ins, const bool scalar[3]) {
  const bool as = scalar[0], bs = scalar[1];
  switch (ins.code) {
    case Code::Copy: return unary<CopyOp>;
    case Code::Unary:
      return unary_ops::with_functor<Fn>(ins.op, ins.p.variant, []<class F>() -> Fn { return unary<F>; });
    case Code::PowConst: return pow_const;
    case Code::Not: return unary<NotOp>;
    case Code::ToBool: return unary<ToBoolOp>;
    case Code::Dequantize: return dequantize;
    case Code::Quantize: return quantize;
    case Code::Add: return pick_binary<AddOp>(as, bs);
    case Code::Sub: return pick_binary<SubOp>(as, bs);
    case Code::Mul: return pick_binary<MulOp>(as, bs);
    case Code::Div: return pick_binary<DivOp>(as, bs);
    case Code::Equal: return pick_binary<EqualOp>(as, bs);
    case Code::Greater: return pick_binary<GreaterOp>(as, bs);
    case Code::Less: return pick_binary<LessOp>(as, bs);
    case Code::GreaterOrEqual: return pick_binary<GreaterOrEqualOp>(as, bs);
    case Code::LessOrEqual: return pick_binary<LessOrEqualOp>(as, bs);
    case Code::Min: return pick_binary<binary_ops::MinOp>(as, bs);
    case Code::Max: return pick_binary<binary_ops::MaxOp>(as, bs);
    case Code::PRelu: return pick_binary<binary_ops::PReluOp>(as, bs);
    case Code::Pow:
      if (as && bs) return pow_tensor<false, false>;
      return as ? pow_tensor<true, false> : bs ? pow_tensor<false, true> : pow_tensor<false, false>;
    case Code::Where: {
      static constexpr Fn kWhere[8] = {where<0>, where<1>, where<2>, where<3>,
                                       where<4>, where<5>, where<6>, where<7>};
      int mask = (scalar[0] ? 1 : 0) | (scalar[1] ? 2 : 0) | (scalar[2] ? 4 : 0);
      return kWhere[mask == 7 ? 0 : mask];
    }
  }
  return nullptr;
}

}  // namespace fusor::cpu::ew
