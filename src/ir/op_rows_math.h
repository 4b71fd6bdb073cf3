// Op rows of one family: Elementwise and comparison ops beyond the elementwise table (variadic, bitwise, logical, integer).
// X(name, category), expanded into FUSOR_OPS (ir/op_table.h). No includes.
#pragma once

#define FUSOR_OPS_MATH(X) \
  X(Min, Broadcast) \
  X(Max, Broadcast) \
  X(Mean, Broadcast) \
  X(Sum, Broadcast) \
  X(Mod, Broadcast) \
  X(BitShift, Broadcast) \
  X(And, Broadcast) \
  X(Or, Broadcast) \
  X(Xor, Broadcast) \
  X(BitwiseAnd, Broadcast) \
  X(BitwiseOr, Broadcast) \
  X(BitwiseXor, Broadcast) \
  X(GreaterOrEqual, Broadcast) \
  X(LessOrEqual, Broadcast) \
  X(PRelu, Broadcast) \
  X(BitwiseNot, Elementwise) \
  X(IsNaN, Elementwise) \
  X(IsInf, Elementwise) \
  X(CastLike, Elementwise) \
  /* every row ends in a backslash */
