// The elementwise table: one row per unary elementwise op y = f(x; params). Every layer reads it:
// the op table (enum entry, name, category Elementwise), the shape functions (a row needs none of
// its own), the reference kernel, the fast unary kernel, the fused-elementwise compiler, the
// fusion pass and the profiler's cost model. A row's two functors live in the kernels and are
// found by its name: ref::unary_fn::<name> (scalar, the spec; src/kernels/ref/unary_functors.h)
// and cpu::unary_ops::<name>Op (SIMD; src/kernels/cpu/unary_ops.h).
//
// Adding an op: one row here, its two functors, and a line in each table-driven test.
//
// X(name, types, flops, recompute, attributes)
//   types       element types the input may have: Float (float32, float64), Signed (Float and the
//               signed integers) or Numeric (every numeric type)
//   flops       cost per element: each arithmetic op, compare-select (max, min, where) and
//               transcendental function (exp, log, tanh, erf, sqrt) of the spec's formula counts 1
//   recompute   Expensive (transcendental: the fusion pass never recomputes such a value for every
//               element it broadcasts to) or Cheap
//   attributes  FUSOR_ATTR(name, default) for each float attribute; `name` is also its
//               UnaryParams member (src/ir/elementwise.h). Clip's bounds and Gelu's approximation
//               are read there by hand: they are inputs and a string.
// No includes: src/ir/op_table.h expands these rows into FUSOR_OPS.
#pragma once

// Rows are R(A, ...): R is a row macro that receives the pass-through argument A first, so that
// FUSOR_OPS can turn each row into its own X(name, category).
#define FUSOR_UNARY_ROWS(R, A)                                                          \
  R(A, Sqrt,        Float,   1, Cheap,     )                                            \
  R(A, Reciprocal,  Float,   1, Cheap,     )                                            \
  R(A, Erf,         Float,   1, Expensive, )                                            \
  R(A, Tanh,        Float,   1, Expensive, )                                            \
  R(A, Exp,         Float,   1, Expensive, )                                            \
  R(A, Log,         Float,   1, Expensive, )                                            \
  R(A, Neg,         Signed,  1, Cheap,     )                                            \
  R(A, Abs,         Numeric, 1, Cheap,     )                                            \
  R(A, Relu,        Signed,  1, Cheap,     )                                            \
  R(A, Sigmoid,     Float,   4, Expensive, )                                            \
  R(A, Gelu,        Float,   5, Expensive, )                                            \
  R(A, Clip,        Numeric, 2, Cheap,     )                                            \
  R(A, HardSigmoid, Float,   4, Cheap,     FUSOR_ATTR(alpha, 0.2f) FUSOR_ATTR(beta, 0.5f)) \
  R(A, HardSwish,   Float,   5, Cheap,     )                                            \
  R(A, LeakyRelu,   Float,   2, Cheap,     FUSOR_ATTR(alpha, 0.01f))                    \
  R(A, Softplus,    Float,   3, Expensive, )                                            \
  R(A, Mish,        Float,   5, Expensive, )                                            \
  R(A, Elu,         Float,   4, Expensive, FUSOR_ATTR(alpha, 1.0f))                     \
  R(A, Floor,       Float,   1, Cheap,     )                                            \
  R(A, Ceil,        Float,   1, Cheap,     )                                            \
  R(A, Round,       Float,   1, Cheap,     )                                            \
  R(A, Sign,        Numeric, 2, Cheap,     )                                            \
  R(A, Sin,         Float,   1, Expensive, )                                            \
  R(A, Cos,         Float,   1, Expensive, )                                            \
  R(A, Tan,         Float,   1, Expensive, )                                            \
  R(A, Asin,        Float,   1, Expensive, )                                            \
  R(A, Acos,        Float,   1, Expensive, )                                            \
  R(A, Atan,        Float,   1, Expensive, )                                            \
  R(A, Sinh,        Float,   1, Expensive, )                                            \
  R(A, Cosh,        Float,   1, Expensive, )                                            \
  R(A, Asinh,       Float,   1, Expensive, )                                            \
  R(A, Acosh,       Float,   1, Expensive, )                                            \
  R(A, Atanh,       Float,   1, Expensive, )                                            \
  R(A, Selu,        Float,   4, Expensive,                                              \
    FUSOR_ATTR(alpha, 1.67326319217681884765625f) FUSOR_ATTR(gamma, 1.05070102214813232421875f)) \
  R(A, Celu,        Float,   5, Expensive, FUSOR_ATTR(alpha, 1.0f))                     \
  R(A, Softsign,    Float,   3, Cheap,     )                                            \
  R(A, ThresholdedRelu, Float, 1, Cheap,   FUSOR_ATTR(alpha, 1.0f))                     \
  R(A, Shrink,      Numeric, 3, Cheap,     FUSOR_ATTR(bias, 0.0f) FUSOR_ATTR(lambd, 0.5f)) \
  /* every row ends in a backslash: adding one is a one-line change */

// The rows as X(name, types, flops, recompute, attributes).
#define FUSOR_UNARY_OPS(X) FUSOR_UNARY_ROWS(FUSOR_UNARY_CALL_, X)
#define FUSOR_UNARY_CALL_(X, ...) X(__VA_ARGS__)
