// Op rows of one family: Quantization: QDQ and integer ops (issue #19 builds the fast kernels and fusion).
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_QUANT(X) \
  X(QuantizeLinear, Elementwise) \
  X(DequantizeLinear, Elementwise) \
  X(DynamicQuantizeLinear, Opaque) \
  X(MatMulInteger, Contraction) \
  X(ConvInteger, Contraction) \
  X(QLinearMatMul, Contraction) \
  X(QLinearConv, Contraction) \
  /* every row ends in a backslash */
