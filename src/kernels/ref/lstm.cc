// Reference LSTM on the shared gate loop (recurrent.h). Gates i, o, f, c with peepholes P:
//   i = f(Wi x + Ri H + Pi * C + bi), f = f(Wf x + Rf H + Pf * C + bf)  (1 - i with input_forget)
//   c = g(Wc x + Rc H + bc), C = f * C + i * c, o = f(Wo x + Ro H + Po * C + bo), H = o * h(C)
#include "kernels/ref/recurrent.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

template <bool InputForget>
void lstm_step(const CellWeights& w, const double* xw, double* h, double* c, double* scratch) {
  const int64_t n = w.hidden;
  double* next = scratch;
  for (int64_t j = 0; j < n; ++j) {
    auto gate = [&](int64_t g) { return xw[g * n + j] + w.Rb[g * n + j] + w.recur(g * n + j, h); };
    auto peep = [&](int64_t k, double cell) { return w.P ? w.P[k * n + j] * cell : 0.0; };
    double i = rnn_activate(w.f[0], w.clip(gate(0) + peep(0, c[j])));
    double f = InputForget ? 1.0 - i : rnn_activate(w.f[0], w.clip(gate(2) + peep(2, c[j])));
    double cand = rnn_activate(w.f[1], w.clip(gate(3)));
    double cell = f * c[j] + i * cand;
    double o = rnn_activate(w.f[0], w.clip(gate(1) + peep(1, cell)));
    next[j] = o * rnn_activate(w.f[2], cell);
    next[n + j] = cell;
  }
  for (int64_t j = 0; j < n; ++j) {
    h[j] = next[j];
    c[j] = next[n + j];
  }
}

}  // namespace

void LSTM(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  bool input_forget = node.attr_int("input_forget", 0) != 0;
  run_recurrent(node, inputs, outputs, recurrent_attrs(node, {"Sigmoid", "Tanh", "Tanh"}), 4, true,
                input_forget ? lstm_step<true> : lstm_step<false>);
}

}  // namespace fusor::ref
