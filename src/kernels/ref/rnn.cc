// Reference RNN: H = f(W x + R H + Wb + Rb), on the shared gate loop (recurrent.h).
#include "kernels/ref/recurrent.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

void rnn_step(const CellWeights& w, const double* xw, double* h, double*, double* next) {
  for (int64_t j = 0; j < w.hidden; ++j) next[j] = rnn_activate(w.f[0], w.clip(xw[j] + w.Rb[j] + w.recur(j, h)));
  for (int64_t j = 0; j < w.hidden; ++j) h[j] = next[j];
}

}  // namespace

void RNN(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  run_recurrent(node, inputs, outputs, recurrent_attrs(node, {"Tanh"}), 1, false, rnn_step);
}

}  // namespace fusor::ref
