// Reference kernels of the unary elementwise ops. Every row of the elementwise table
// (ir/elementwise_table.h) runs its scalar functor (ref/unary_functors.h) over the input's
// element types; Not, IsNaN, IsInf, Identity, CastLike and Dropout (inference) are written out
// here.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ref/reference.h"
#include "kernels/ref/unary_functors.h"

namespace fusor {
namespace {

using ref::elem_t;

// The node's parameters, every defined input being known.
UnaryParams params(const Node& node, std::span<const Tensor> in) {
  std::vector<TensorType> types;
  std::vector<const Tensor*> values;
  for (const Tensor& t : in) {
    types.push_back(t.defined() ? TensorType{t.dtype(), t.dims()} : TensorType{});
    values.push_back(t.defined() ? &t : nullptr);
  }
  const std::optional<UnaryParams> p = unary_params(node, types, values);
  if (!p) fail(node, "a bound is not a scalar");
  return *p;
}

// y = F(x; params) over the element types the table row accepts.
template <class F, UnaryTypes kTypes>
void table_op(const Node& node, std::span<const Tensor> in, std::span<Tensor> out) {
  auto run = [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const UnaryParams p = params(node, in);
    ref::map_unary<T>(in[0], out[0], [&](T x) { return F::apply(x, p); });
  };
  if constexpr (kTypes == UnaryTypes::Float) ref::visit_float(in[0].dtype(), node, run);
  else if constexpr (kTypes == UnaryTypes::Signed)
    ref::visit_family<ref::is_signed_type>(in[0].dtype(), node, "a float or signed integer type", run);
  else ref::visit_family<ref::is_numeric_type>(in[0].dtype(), node, "a numeric type", run);
}

void copy_input(const Tensor& in, const Tensor& out) {
  if (in.raw() != out.raw() && in.nbytes()) std::memcpy(out.raw(), in.raw(), in.nbytes());
}

}  // namespace

namespace ref {

#define FUSOR_UNARY_REF_FN_(name, types, ...)                                          \
  void name(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {       \
    table_op<unary_fn::name, UnaryTypes::types>(n, in, out);                           \
  }
FUSOR_UNARY_OPS(FUSOR_UNARY_REF_FN_)
#undef FUSOR_UNARY_REF_FN_

void Not(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  require_dtype(n, in[0], DType::Bool, "input");
  map_unary<bool>(in[0], out[0], [](bool x) { return !x; });
}

void IsNaN(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  visit_float(in[0].dtype(), n, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    map_unary<T, bool>(in[0], out[0], [](T x) { return std::isnan(x); });
  });
}

// Which infinities count: detect_negative and detect_positive (both by default).
void IsInf(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const bool negative = n.attr_int("detect_negative", 1) != 0, positive = n.attr_int("detect_positive", 1) != 0;
  visit_float(in[0].dtype(), n, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    map_unary<T, bool>(in[0], out[0], [&](T x) { return std::isinf(x) && (x < T(0) ? negative : positive); });
  });
}

// Cast to input 1's dtype, which the shape function gave the output: Cast's conversion.
void CastLike(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) { Cast(n, in.first(1), out); }

void Identity(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  require_dtype(n, out[0], in[0].dtype(), "output");
  copy_input(in[0], out[0]);
}

void Dropout(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  if (n.opset >= 12 && in.size() > 2 && in[2].defined() && in[2].scalar_as_double() != 0.0) {
    bool ratio_zero = in.size() > 1 && in[1].defined() && in[1].scalar_as_double() == 0.0;
    if (!ratio_zero) fail(n, "training_mode=true is not supported (inference only)");
  }
  copy_input(in[0], out[0]);
  if (out.size() > 1 && out[1].defined()) {  // mask: everything kept
    visit_dtype(out[1].dtype(), n, [&](auto* tag) {
      using M = elem_t<decltype(tag)>;
      std::fill_n(out[1].data<M>(), out[1].numel(), M(1));
    });
  }
}

}  // namespace ref
}  // namespace fusor
