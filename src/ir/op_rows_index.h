// Op rows of one family: Reductions beyond sum/mean/max, and index ops.
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_INDEX(X) \
  X(ReduceMin, Reduction) \
  X(ReduceProd, Reduction) \
  X(ReduceL1, Reduction) \
  X(ReduceL2, Reduction) \
  X(ReduceLogSum, Reduction) \
  X(ReduceLogSumExp, Reduction) \
  X(ReduceSumSquare, Reduction) \
  X(ArgMax, Reduction) \
  X(ArgMin, Reduction) \
  X(Hardmax, Reduction) \
  X(TopK, Opaque) \
  X(CumSum, Opaque) \
  X(OneHot, Opaque) \
  X(Size, Opaque) \
  /* every row ends in a backslash */
