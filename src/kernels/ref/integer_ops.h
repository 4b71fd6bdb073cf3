// Shared steps of the integer MatMul and Conv reference kernels: operands minus their zero
// points widened to an exact type (int64 for MatMul, float64 for Conv, whose reference kernel
// is float-only; both hold the 8-bit products' sums exactly), and the requantization of
// QLinearMatMul and QLinearConv.
#pragma once
#include <span>
#include <vector>

#include "ir/graph.h"

namespace fusor::ref {

// `t` minus `zp` (optional; numpy-broadcast against t, or per row when `zp_per_row` and zp is a
// vector of t's dim -2), as a tensor of dtype `to` (Int64 or Float64).
Tensor minus_zero_point(const Tensor& t, const Tensor* zp, DType to, bool zp_per_row = false);

// `t` minus a per-tensor or per-dim-0 zero point (Conv weights), as float64.
Tensor minus_channel_zero_point(const Tensor& t, const Tensor* zp);

// y = saturate(round_half_even(acc * multiplier[c] + y_zero_point)), where c is the channel of
// each element: (i / inner) % channels, and multiplier[c] = a_scale * b_scale[c] / y_scale in
// the scales' type (float16 rounds each step, as numpy does), as ONNX's reference computes it. `acc` holds exact integers (int64 or float64).
// With `wrap`, out-of-range results wrap modulo 256 instead of saturating: ONNX's reference
// QLinearMatMul casts without clipping, and its node tests expect that.
void requantize(const Node& n, const Tensor& acc, const Tensor& a_scale, const Tensor& b_scale,
                const Tensor& y_scale, const Tensor* y_zero_point, int64_t inner, bool wrap, Tensor& y);

// requantize's two steps, for the fast kernels (kernels/cpu/qlinear_onednn.cc) to compute the
// same values: the per-channel multipliers, and one element (acc * multiplier + zero_point,
// rounded half to even, saturated or, with `wrap`, wrapped into y's type) stored as y[i].
std::vector<double> requantize_multipliers(const Tensor& a_scale, const Tensor& b_scale, const Tensor& y_scale);
void store_requantized(Tensor& y, int64_t i, double acc, double multiplier, double zero_point, bool wrap);

}  // namespace fusor::ref
