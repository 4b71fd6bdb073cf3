// Reference kernels of the bit-level ops: BitShift and BitwiseAnd/Or/Xor/Not on integers, and
// the logical And/Or/Xor on bools. The binary ones broadcast like the arithmetic ops.
#include <limits>
#include <string>
#include <type_traits>

#include "kernels/ref/broadcast.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

using ref::elem_t;

template <class T> struct is_integer_type : std::bool_constant<std::is_integral_v<T> && !std::is_same_v<T, bool>> {};
template <class T> struct is_unsigned_type : std::bool_constant<is_integer_type<T>::value && std::is_unsigned_v<T>> {};

// c = f(a, b) for two integer operands of one dtype (Accept picks which integers).
template <template <class> class Accept, class F>
void integer_op(const Node& node, std::span<const Tensor> in, std::span<Tensor> out, const char* expects, F f) {
  ref::require_dtype(node, in[1], in[0].dtype(), "input 1");
  ref::visit_family<Accept>(in[0].dtype(), node, expects, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    ref::broadcast_map<T, T, T>(out[0], {&in[0], &in[1]}, [&](T a, T b) { return static_cast<T>(f(a, b)); });
  });
}

template <class F>
void logical(const Node& node, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  ref::require_dtype(node, in[0], DType::Bool, "input 0");
  ref::require_dtype(node, in[1], DType::Bool, "input 1");
  ref::broadcast_map<bool, bool, bool>(out[0], {&in[0], &in[1]}, f);
}

// a shifted by b bits; shifting by the width or more leaves no bits (C++ leaves it undefined).
template <class T>
T shift(T a, T b, bool left) {
  if (b >= static_cast<T>(std::numeric_limits<T>::digits)) return T(0);
  return static_cast<T>(left ? a << b : a >> b);
}

}  // namespace

namespace ref {

void BitShift(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const std::string direction = n.attr_string("direction", "");
  if (direction != "LEFT" && direction != "RIGHT")
    fail(n, "direction must be 'LEFT' or 'RIGHT', got '" + direction + "'");
  const bool left = direction == "LEFT";
  integer_op<is_unsigned_type>(n, in, out, "an unsigned integer type",
                               [&](auto a, auto b) { return shift(a, b, left); });
}

void BitwiseAnd(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  integer_op<is_integer_type>(n, in, out, "an integer type", [](auto a, auto b) { return a & b; });
}
void BitwiseOr(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  integer_op<is_integer_type>(n, in, out, "an integer type", [](auto a, auto b) { return a | b; });
}
void BitwiseXor(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  integer_op<is_integer_type>(n, in, out, "an integer type", [](auto a, auto b) { return a ^ b; });
}

void BitwiseNot(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  visit_family<is_integer_type>(in[0].dtype(), n, "an integer type", [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    map_unary<T>(in[0], out[0], [](T x) { return static_cast<T>(~x); });
  });
}

void And(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  logical(n, in, out, [](bool a, bool b) { return a && b; });
}
void Or(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  logical(n, in, out, [](bool a, bool b) { return a || b; });
}
void Xor(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  logical(n, in, out, [](bool a, bool b) { return a != b; });
}

}  // namespace ref
}  // namespace fusor
