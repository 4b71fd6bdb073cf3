// Op rows of one family: Convolution, normalization and pooling ops beyond Conv/BatchNorm/LayerNorm.
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_NN(X) \
  X(ConvTranspose, Contraction) \
  X(GroupNormalization, Reduction) \
  X(InstanceNormalization, Reduction) \
  X(LpNormalization, Reduction) \
  X(MeanVarianceNormalization, Reduction) \
  X(LRN, Opaque) \
  X(GlobalMaxPool, Reduction) \
  X(LpPool, Opaque) \
  X(MaxUnpool, Opaque) \
  X(DeformConv, Opaque) \
  X(Col2Im, Opaque) \
  /* every row ends in a backslash */
