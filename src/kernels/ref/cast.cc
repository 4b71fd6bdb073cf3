// Reference kernel of Cast between every pair of supported dtypes.
#include "kernels/ref/cast.h"

#include <type_traits>

#include "ir/half.h"
#include "kernels/ref/cast_quant.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

// The storage types as element types for this file: their bits, read and written as float.
struct Half { uint16_t bits; };
struct BHalf { uint16_t bits; };
template <class T> constexpr bool is_storage_v = std::is_same_v<T, Half> || std::is_same_v<T, BHalf>;

// visit_dtype plus the two storage types.
template <class F>
void visit_cast_dtype(DType t, const Node& n, F&& f) {
  if (t == DType::Float16) return f(static_cast<Half*>(nullptr));
  if (t == DType::BFloat16) return f(static_cast<BHalf*>(nullptr));
  ref::visit_dtype(t, n, f);
}

template <class To, class From>
To convert(From x) {
  if constexpr (std::is_same_v<From, Half>) {
    return convert<To>(half_to_float(x.bits));
  } else if constexpr (std::is_same_v<From, BHalf>) {
    return convert<To>(bfloat16_to_float(x.bits));
  } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BHalf>) {
    // One rounding: from float as it is, from anything else through double (exact for every
    // integer that stays below float16's and bfloat16's overflow).
    using Wide = std::conditional_t<std::is_same_v<From, float>, float, double>;
    const Wide w = static_cast<Wide>(x);
    if constexpr (std::is_same_v<To, Half>) return Half{float_to_half(w)};
    else return BHalf{float_to_bfloat16(w)};
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    return ref::float_to_int<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace

void ref::cast_elements(const Node& n, const Tensor& in, Tensor& out) {
  if (in.numel() != out.numel())
    fail(n, "cast of " + std::to_string(in.numel()) + " elements into " + std::to_string(out.numel()));
  if (is_quant_storage(in.dtype()) || is_quant_storage(out.dtype())) return cast_quant_storage(n, in, out);
  visit_cast_dtype(in.dtype(), n, [&](auto* from_tag) {
    using From = elem_t<decltype(from_tag)>;
    visit_cast_dtype(out.dtype(), n, [&](auto* to_tag) {
      using To = elem_t<decltype(to_tag)>;
      const From* x = static_cast<const From*>(in.raw());
      To* y = static_cast<To*>(out.raw());
      const int64_t count = in.numel();
      if constexpr (std::is_same_v<From, To>) {
        for (int64_t i = 0; i < count; ++i) y[i] = x[i];
      } else {
        for (int64_t i = 0; i < count; ++i) y[i] = convert<To>(x[i]);
      }
    });
  });
}

void ref::Cast(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) { cast_elements(n, in[0], out[0]); }

}  // namespace fusor
