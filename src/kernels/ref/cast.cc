// Reference kernel of Cast between every pair of supported dtypes. Float to integer truncates
// toward zero like numpy; anything to bool is "x != 0".
#include <type_traits>

#include "kernels/ref/cast_quant.h"
#include "kernels/ref/elementwise.h"
#include "kernels/ref/reference.h"

namespace fusor {
namespace {

template <class To, class From>
To convert(From x) {
  if constexpr (std::is_same_v<To, bool>) return x != From(0);
  else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) return ref::float_to_int<To>(x);
  else return static_cast<To>(x);
}

}  // namespace

void ref::Cast(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  if (is_quant_storage(in[0].dtype()) || is_quant_storage(out[0].dtype())) return cast_quant_storage(n, in[0], out[0]);
  visit_dtype(in[0].dtype(), n, [&](auto* from_tag) {
    using From = elem_t<decltype(from_tag)>;
    visit_dtype(out[0].dtype(), n, [&](auto* to_tag) {
      using To = elem_t<decltype(to_tag)>;
      map_unary<From, To>(in[0], out[0], [](From x) { return convert<To>(x); });
    });
  });
}

}  // namespace fusor
