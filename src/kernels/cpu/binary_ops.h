// Float32 SIMD functors of the binary ops whose formula is more than one Highway call, shared by
// the broadcasting binary kernel (binary.cc) and the fused elementwise programs
// (fused_elementwise_program.cc), so both compute exactly what the other does.
#pragma once
#include "kernels/cpu/simd.h"

namespace fusor::cpu::binary_ops {

using simd::D;
using simd::V;
namespace hn = simd::hn;

// x86's min and max return the second operand when either is NaN; the spec (numpy's minimum and
// maximum) returns NaN, so a NaN in `a` is put back (one in `b` already comes through).
struct MinOp {
  static HWY_INLINE V apply(V a, V b) { return hn::IfThenElse(hn::Not(hn::Eq(a, a)), a, hn::Min(a, b)); }
};
struct MaxOp {
  static HWY_INLINE V apply(V a, V b) { return hn::IfThenElse(hn::Not(hn::Eq(a, a)), a, hn::Max(a, b)); }
};
// x < 0 ? slope * x : x (NaN fails the test and stays).
struct PReluOp {
  static HWY_INLINE V apply(V x, V slope) { return hn::IfThenElse(hn::Lt(x, hn::Zero(D())), hn::Mul(x, slope), x); }
};

}  // namespace fusor::cpu::binary_ops
