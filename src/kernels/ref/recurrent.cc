#include "kernels/ref/recurrent.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "ir/shape_util.h"
#include "kernels/ref/dispatch.h"

namespace fusor::ref {
namespace {

// An input as double values; empty when the optional input is absent.
std::vector<double> as_doubles(const Node& node, std::span<const Tensor> inputs, size_t i) {
  if (i >= inputs.size() || !inputs[i].defined()) return {};
  std::vector<double> v(static_cast<size_t>(inputs[i].numel()));
  visit_float(inputs[i].dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* p = inputs[i].data<T>();
    for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<double>(p[k]);
  });
  return v;
}

template <class T>
void store(Tensor& t, int64_t offset, const double* src, int64_t n) {
  T* dst = t.data<T>() + offset;
  for (int64_t k = 0; k < n; ++k) dst[k] = static_cast<T>(src[k]);
}

}  // namespace

double rnn_activate(const RnnActivation& f, double x) {
  switch (f.kind) {
    case RnnActivationKind::Relu: return std::max(x, 0.0);
    case RnnActivationKind::Tanh: return std::tanh(x);
    case RnnActivationKind::Sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case RnnActivationKind::Affine: return f.alpha * x + f.beta;
    case RnnActivationKind::LeakyRelu: return x >= 0 ? x : f.alpha * x;
    case RnnActivationKind::ThresholdedRelu: return x > f.alpha ? x : 0.0;
    case RnnActivationKind::ScaledTanh: return f.alpha * std::tanh(f.beta * x);
    case RnnActivationKind::HardSigmoid: return std::clamp(f.alpha * x + f.beta, 0.0, 1.0);
    case RnnActivationKind::Elu: return x >= 0 ? x : f.alpha * (std::exp(x) - 1.0);
    case RnnActivationKind::Softsign: return x / (1.0 + std::abs(x));
    case RnnActivationKind::Softplus: return std::log1p(std::exp(-std::abs(x))) + std::max(x, 0.0);
  }
  return x;
}

double CellWeights::clip(double v) const {
  return attrs->clip ? std::clamp(v, -*attrs->clip, *attrs->clip) : v;
}

double CellWeights::recur(int64_t row, const double* h) const {
  const double* r = R + row * hidden;
  double s = 0;
  for (int64_t k = 0; k < hidden; ++k) s += r[k] * h[k];
  return s;
}

void run_recurrent(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                   const RecurrentAttrs& attrs, int64_t gates, bool has_cell, CellStep step) {
  const Tensor& x = inputs[0];
  const bool batch_major = attrs.layout == 1;
  const int64_t seq = batch_major ? x.dim(1) : x.dim(0), batch = batch_major ? x.dim(0) : x.dim(1);
  const int64_t in_size = x.dim(2), dirs = attrs.num_directions;
  const int64_t hidden = inputs[2].dim(2), rows = gates * hidden;
  const std::vector<double> X = as_doubles(node, inputs, 0), W = as_doubles(node, inputs, 1),
                            R = as_doubles(node, inputs, 2), B = as_doubles(node, inputs, 3),
                            H0 = as_doubles(node, inputs, 5);
  const std::vector<double> C0 = has_cell ? as_doubles(node, inputs, 6) : std::vector<double>{};
  const std::vector<double> P = has_cell ? as_doubles(node, inputs, 7) : std::vector<double>{};
  std::vector<int64_t> lens(static_cast<size_t>(batch), seq);
  if (inputs.size() > 4 && inputs[4].defined()) lens = inputs[4].to_int64_vector();
  for (int64_t len : lens)
    if (len < 0 || len > seq)
      fail(node, "sequence_lens value " + std::to_string(len) + " is outside [0, " + std::to_string(seq) + "]",
           ErrorKind::InvalidArgument);
  const std::vector<double> zeros(static_cast<size_t>(2 * rows), 0.0);

  auto out = [&](size_t i) -> Tensor* { return i < outputs.size() && outputs[i].defined() ? &outputs[i] : nullptr; };
  Tensor *Y = out(0), *Yh = out(1), *Yc = has_cell ? out(2) : nullptr;
  // Offsets in elements of [dir, batch] rows of the state tensors and of [t, dir, batch] rows of Y.
  auto state_at = [&](int64_t d, int64_t b) { return (batch_major ? b * dirs + d : d * batch + b) * hidden; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return (batch_major ? (b * seq + t) * dirs + d : (t * dirs + d) * batch + b) * hidden;
  };
  auto x_at = [&](int64_t t, int64_t b) { return (batch_major ? b * seq + t : t * batch + b) * in_size; };

  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const std::vector<double> none(static_cast<size_t>(hidden), 0.0);
    if (Y) {
      T* y = Y->data<T>();
      std::fill(y, y + Y->numel(), T(0));  // steps past a sequence's length stay zero
    }
    for (int64_t d = 0; d < dirs; ++d) {
      const bool reverse = attrs.direction == RnnDirection::Reverse || d == 1;
      const double* bias = B.empty() ? zeros.data() : B.data() + d * 2 * rows;
      CellWeights cw{hidden, R.data() + d * rows * hidden, bias + rows,
                     P.empty() ? nullptr : P.data() + d * 3 * hidden, attrs.functions(d), &attrs, &node};
      const double* w = W.data() + d * rows * in_size;
      std::vector<double> h(static_cast<size_t>(hidden)), c(static_cast<size_t>(hidden)),
          xw(static_cast<size_t>(rows)), scratch(static_cast<size_t>(4 * hidden));
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t s0 = state_at(d, b);
        std::copy_n(H0.empty() ? none.data() : H0.data() + s0, hidden, h.begin());
        std::copy_n(C0.empty() ? none.data() : C0.data() + s0, hidden, c.begin());
        const int64_t len = lens[static_cast<size_t>(b)];
        for (int64_t s = 0; s < len; ++s) {
          const int64_t t = reverse ? len - 1 - s : s;
          const double* xt = X.data() + x_at(t, b);
          for (int64_t row = 0; row < rows; ++row) {
            const double* wr = w + row * in_size;
            double acc = bias[row];
            for (int64_t k = 0; k < in_size; ++k) acc += wr[k] * xt[k];
            xw[static_cast<size_t>(row)] = acc;
          }
          step(cw, xw.data(), h.data(), has_cell ? c.data() : nullptr, scratch.data());
          if (Y) store<T>(*Y, y_at(t, d, b), h.data(), hidden);
        }
        if (Yh) store<T>(*Yh, s0, h.data(), hidden);
        if (Yc) store<T>(*Yc, s0, c.data(), hidden);
      }
    }
  });
}

}  // namespace fusor::ref
