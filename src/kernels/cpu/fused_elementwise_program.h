// A fused Elementwise node's body compiled to a register program: one instruction per body node,
// each reading and writing "slots" (a node input, a temporary, or a node output). The kernel
// (fused_elementwise.cc) runs the program tile by tile: every instruction sweeps one tile of
// 8-64 vectors that stays in L1, so an intermediate never goes to memory and the interpreter's
// dispatch costs one indirect call per instruction per tile, not per element.
//
// Values are float32 in registers. Bool values are 0.0/1.0 (compares, Not, Cast to bool);
// bool, int32 and int64 node inputs are converted to float when a tile loads them, so they may
// feed Cast, Where and Not (int values are exact up to 2^24, which is all a Cast to float keeps).
// Quantized values (a QDQ model's activations): a uint8/int8 input is loaded as float and read
// only by a per-tensor DequantizeLinear; a per-tensor QuantizeLinear leaves an integer-valued
// float, stored into a uint8/int8 output.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "kernels/cpu/unary_ops.h"
#include "kernels/kernel.h"

namespace fusor::cpu::ew {

using unary_ops::Params;

// Runs one instruction over n elements. `in` holds up to three operand pointers; an operand the
// instruction was bound to read as a scalar points at one value.
using Fn = void (*)(const float* const* in, float* out, int64_t n, const Params& p);

enum class Code : uint8_t {
  // one operand; Unary is any op of the elementwise table (Instr::op)
  Copy, Unary, PowConst, Not, ToBool,
  // two operands
  Add, Sub, Mul, Div, Pow, Min, Max, PRelu, Equal, Greater, Less, GreaterOrEqual, LessOrEqual,
  // three
  Where,
  // one operand, per-tensor parameters in Params: alpha the scale, beta the zero point; lo and
  // hi the quantized type's range
  Dequantize, Quantize,
};

struct Instr {
  Code code = Code::Copy;
  Op op = Op::Count;  // Unary: the table op
  int dst = -1;
  int src[3] = {-1, -1, -1};
  int nsrc = 0;
  Params p;  // Unary: the op's parameters and variant; PowConst: the exponent in alpha
};

struct Program {
  std::vector<Instr> code;
  int slots = 0;
  std::vector<int> input_slot;   // per node input: its slot, or -1 when no instruction reads it
  std::vector<int> output_slot;  // per node output
  std::vector<DType> input_dtype;  // per node input
  std::vector<DType> output_dtype;  // per node output: float32, bool, or uint8/int8 (a QuantizeLinear's)
};

// Compiles the fused node's body for these input types and plan-time constants (Clip bounds,
// Pow exponents), or says why not.
std::variant<Program, std::string> compile_program(const Node& fused, std::span<const TensorType> inputs,
                                                   std::span<const Tensor* const> constants);

// The function that runs `ins` with operands that are scalars where `scalar[i]` says so.
Fn select_fn(const Instr& ins, const bool scalar[3]);

}  // namespace fusor::cpu::ew
