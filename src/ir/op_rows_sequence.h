// Op rows of one family: Recurrent, spectral, spatial-sampling and linear-algebra ops.
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_SEQUENCE(X) \
  X(RNN, Opaque) \
  X(GRU, Opaque) \
  X(LSTM, Opaque) \
  X(Einsum, Contraction) \
  X(Det, Opaque) \
  X(DFT, Opaque) \
  X(STFT, Opaque) \
  X(HannWindow, Opaque) \
  X(HammingWindow, Opaque) \
  X(BlackmanWindow, Opaque) \
  X(MelWeightMatrix, Opaque) \
  X(RoiAlign, Opaque) \
  X(GridSample, Opaque) \
  X(AffineGrid, Opaque) \
  /* every row ends in a backslash */
