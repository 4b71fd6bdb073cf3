// Reference kernels of the unary elementwise ops: math functions, activations, Clip, Not,
// Identity and Dropout (inference). Each op is one lambda over the element; float32 is computed
// in float.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>

#include "kernels/ref/reference.h"
#include "kernels/ref/elementwise.h"

namespace fusor {
namespace {

using ref::elem_t;

// Float-only op: y = f(x) with x and y of the input's float type.
template <class F>
void float_op(const Node& node, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  ref::visit_float(in[0].dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    ref::map_unary<T>(in[0], out[0], [&](T x) { return static_cast<T>(f(x)); });
  });
}

// Op over a family of types (signed, numeric, ...): y = f(x), same type.
template <template <class> class Accept, class F>
void typed_op(const Node& node, const char* expects, std::span<const Tensor> in, std::span<Tensor> out, F f) {
  ref::visit_family<Accept>(in[0].dtype(), node, expects, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    ref::map_unary<T>(in[0], out[0], [&](T x) { return static_cast<T>(f(x)); });
  });
}

void copy_input(const Tensor& in, const Tensor& out) {
  if (in.raw() != out.raw() && in.nbytes()) std::memcpy(out.raw(), in.raw(), in.nbytes());
}

}  // namespace

namespace ref {

void Sqrt(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) { return std::sqrt(x); });
}
void Reciprocal(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) { return decltype(x)(1) / x; });
}
void Erf(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) { return std::erf(x); });
}
void Tanh(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) { return std::tanh(x); });
}
void Exp(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) { return std::exp(x); });
}
void Log(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) { return std::log(x); });
}
void Sigmoid(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) {
    using T = decltype(x);
    return T(1) / (T(1) + std::exp(-x));
  });
}

void Gelu(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  if (n.attr_string("approximate", "none") == "tanh") {
    float_op(n, in, out, [](auto x) {
      using T = decltype(x);
      const T k = std::sqrt(T(2) / std::numbers::pi_v<T>);
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    });
  } else {
    float_op(n, in, out, [](auto x) {
      using T = decltype(x);
      return T(0.5) * x * (T(1) + std::erf(x / std::numbers::sqrt2_v<T>));
    });
  }
}

void HardSigmoid(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const float alpha = n.attr_float("alpha", 0.2f), beta = n.attr_float("beta", 0.5f);
  float_op(n, in, out, [&](auto x) {
    using T = decltype(x);
    return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
  });
}

void HardSwish(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  float_op(n, in, out, [](auto x) {
    using T = decltype(x);
    return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));
  });
}

void LeakyRelu(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  const float alpha = n.attr_float("alpha", 0.01f);
  float_op(n, in, out, [&](auto x) {
    using T = decltype(x);
    return x < T(0) ? T(alpha) * x : x;
  });
}

void Neg(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  typed_op<is_signed_type>(n, "a float or signed integer type", in, out, [](auto x) { return wrap_neg(x); });
}
void Abs(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  typed_op<is_numeric_type>(n, "a numeric type", in, out, [](auto x) {
    using T = decltype(x);
    if constexpr (std::is_signed_v<T>) return x < T(0) ? wrap_neg(x) : x;
    else return x;
  });
}
void Relu(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  // NaN stays NaN, like numpy's maximum(x, 0).
  typed_op<is_signed_type>(n, "a float or signed integer type", in, out,
                           [](auto x) { return x < decltype(x)(0) ? decltype(x)(0) : x; });
}

void Not(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  require_dtype(n, in[0], DType::Bool, "input");
  map_unary<bool>(in[0], out[0], [](bool x) { return !x; });
}

void Clip(const Node& n, std::span<const Tensor> in, std::span<Tensor> out) {
  visit_family<is_numeric_type>(in[0].dtype(), n, "a numeric type", [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
    if (n.opset < 11) {  // min and max are attributes
      if (n.has_attr("min")) lo = static_cast<T>(n.attr_float("min", 0));
      if (n.has_attr("max")) hi = static_cast<T>(n.attr_float("max", 0));
    } else {
      auto bound = [&](size_t i, const char* what, T& value) {
        if (in.size() <= i || !in[i].defined()) return;
        require_dtype(n, in[i], in[0].dtype(), what);
        value = in[i].data<T>()[0];
      };
      bound(1, "min", lo);
      bound(2, "max", hi);
    }
    // min(max(x, lo), hi) like numpy.clip: NaN stays NaN and lo > hi gives hi.
    map_unary<T>(in[0], out[0], [&](T x) { return std::min(std::max(x, lo), hi); });
  });
}

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
