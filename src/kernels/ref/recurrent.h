// The gate-loop skeleton RNN, GRU and LSTM share: it reads the inputs in double, walks each
// direction over each batch entry's valid steps (sequence_lens), projects the input through W,
// and leaves the recurrence itself to the op's cell. It writes Y, Y_h and Y_c in either layout.
#pragma once
#include <span>

#include "ir/recurrent_attrs.h"

namespace fusor::ref {

double rnn_activate(const RnnActivation& f, double x);

// What a cell sees for one direction. Gate blocks are stacked as in ONNX (LSTM i, o, f, c;
// GRU z, r, h), each `hidden` rows.
struct CellWeights {
  int64_t hidden = 0;
  const double* R = nullptr;   // [gates * hidden, hidden]
  const double* Rb = nullptr;  // [gates * hidden] recurrence bias
  const double* P = nullptr;   // LSTM peepholes [3 * hidden] (i, o, f)
  const RnnActivation* f = nullptr;  // this direction's activation functions
  const RecurrentAttrs* attrs = nullptr;
  const Node* node = nullptr;
  double clip(double v) const;
  // Row `row` of R times h.
  double recur(int64_t row, const double* h) const;
};

// Advances one batch entry by one step: `xw` holds W x + Wb (gates * hidden values); `h` and
// `c` (LSTM only, else null) are updated in place; `scratch` has room for 4 * hidden values.
using CellStep = void (*)(const CellWeights& w, const double* xw, double* h, double* c, double* scratch);

void run_recurrent(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                   const RecurrentAttrs& attrs, int64_t gates, bool has_cell, CellStep step);

}  // namespace fusor::ref
