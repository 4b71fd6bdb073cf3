// Reference GRU on the shared gate loop (recurrent.h). Gates z (update), r (reset), h (hidden):
//   z = f(Wz x + Rz H + bz), r = f(Wr x + Rr H + br)
//   h = g(Wh x + Rh (r * H) + Rbh + Wbh), or with linear_before_reset g(Wh x + r * (Rh H + Rbh) + Wbh)
//   H = (1 - z) * h + z * H
#include "kernels/ref/recurrent.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

template <bool LinearBeforeReset>
void gru_step(const CellWeights& w, const double* xw, double* h, double*, double* scratch) {
  const int64_t n = w.hidden;
  double *z = scratch, *r = scratch + n, *rh = scratch + 2 * n, *next = scratch + 3 * n;
  for (int64_t j = 0; j < n; ++j) {
    z[j] = rnn_activate(w.f[0], w.clip(xw[j] + w.Rb[j] + w.recur(j, h)));
    r[j] = rnn_activate(w.f[0], w.clip(xw[n + j] + w.Rb[n + j] + w.recur(n + j, h)));
    rh[j] = r[j] * h[j];
  }
  for (int64_t j = 0; j < n; ++j) {
    double pre = LinearBeforeReset ? xw[2 * n + j] + r[j] * (w.recur(2 * n + j, h) + w.Rb[2 * n + j])
                                   : xw[2 * n + j] + w.recur(2 * n + j, rh) + w.Rb[2 * n + j];
    double cand = rnn_activate(w.f[1], w.clip(pre));
    next[j] = (1.0 - z[j]) * cand + z[j] * h[j];
  }
  for (int64_t j = 0; j < n; ++j) h[j] = next[j];
}

}  // namespace

void GRU(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  bool lbr = node.attr_int("linear_before_reset", 0) != 0;
  run_recurrent(node, inputs, outputs, recurrent_attrs(node, {"Sigmoid", "Tanh"}), 3, false,
                lbr ? gru_step<true> : gru_step<false>);
}

}  // namespace fusor::ref
