// MatMulNBits (ONNX Runtime's weight-only n-bit matmul, as ORT GenAI's builder emits it):
// Y = A @ dequantize(B) + bias, where B holds, for each of the N output columns, K codes of
// `bits` bits packed low bits first along K, in blocks of block_size that share a scale and a
// zero point. The weight is unpacked at import into a [K, N] tensor, so the expansion is a
// blocked DequantizeLinear (opset 21, block_size along axis 0) feeding a plain MatMul. Below
// opset 21, and with float zero points (which DequantizeLinear cannot hold), the expansion holds
// the dequantized float32 weight instead.
#include <onnx/onnx_pb.h>

#include <cstring>

#include "onnx/contrib_quant.h"
#include "onnx/tensor_proto.h"

namespace fusor::contrib {
namespace {

constexpr int64_t kMinBlockedDequantizeOpset = 21;
constexpr int64_t kMaxDim = int64_t{1} << 24;

// The packed inputs, checked against the attributes.
struct PackedWeight {
  int64_t k, n, bits, block_size, blocks;
  const uint8_t* codes;         // [N, blocks, block_size * bits / 8]
  const float* scales;          // [N * blocks]
  const uint8_t* zero_points;   // packed, [N, ceil(blocks * bits / 8)], or null
  const float* float_zero_points;  // [N * blocks], or null

  int code_mask() const { return (1 << bits) - 1; }
  // Code of weight (k, n): byte k * bits / 8 of the column's codes, its bits low first.
  int code(int64_t row, int64_t col) const {
    const int64_t bit = row * bits;  // blocks are whole bytes, so the column is one bit stream
    const uint8_t byte = codes[(col * blocks * block_size * bits) / 8 + bit / 8];
    return (byte >> (bit % 8)) & code_mask();
  }
  // Zero point of block `blk` of column n: 2^(bits-1) when absent.
  int zero_point(int64_t blk, int64_t col) const {
    if (!zero_points) return 1 << (bits - 1);
    const int64_t row_bytes = (blocks * bits + 7) / 8, bit = blk * bits;
    return (zero_points[col * row_bytes + bit / 8] >> (bit % 8)) & code_mask();
  }
  float scale(int64_t blk, int64_t col) const { return scales[col * blocks + blk]; }
};

const Tensor& constant_input(ContribExpander& ex, NodeBuilder& b, size_t i, const char* what, DType dtype,
                             int64_t count) {
  const Tensor* t = ex.constant(b.in(i));
  if (!t) b.unsupported("input " + std::to_string(i) + " (" + what + ") must be an initializer");
  const std::string input = "input " + std::to_string(i) + " (" + what + ")";
  if (t->dtype() != dtype)
    b.unsupported(input + " has dtype " + dtype_name(t->dtype()) + ", expected " + dtype_name(dtype));
  if (t->numel() != count)
    b.invalid(input + " has " + std::to_string(t->numel()) + " elements, expected " + std::to_string(count));
  return *t;
}

PackedWeight read_packed(ContribExpander& ex, NodeBuilder& b) {
  PackedWeight w{};
  w.k = b.attr_int("K", 0);
  w.n = b.attr_int("N", 0);
  w.bits = b.attr_int("bits", 4);
  w.block_size = b.attr_int("block_size", 0);
  // The bounds keep the element counts below from overflowing; real weights are far smaller.
  if (w.k < 1 || w.n < 1 || w.k > kMaxDim || w.n > kMaxDim)
    b.invalid("attributes K and N must be from 1 to " + std::to_string(kMaxDim));
  if (w.bits != 2 && w.bits != 4 && w.bits != 8)
    b.unsupported("bits=" + std::to_string(w.bits) + " (supported: 2, 4, 8)");
  if (w.block_size < 16 || w.block_size > kMaxDim || (w.block_size & (w.block_size - 1)))
    b.invalid("block_size must be a power of 2 of at least 16, got " + std::to_string(w.block_size));
  w.blocks = (w.k + w.block_size - 1) / w.block_size;
  w.codes = constant_input(ex, b, 1, "B", DType::UInt8, w.n * w.blocks * w.block_size * w.bits / 8).data<uint8_t>();
  w.scales = constant_input(ex, b, 2, "scales", DType::Float32, w.n * w.blocks).data<float>();
  if (b.has_in(3)) {
    const Tensor* zp = ex.constant(b.in(3));
    if (zp && zp->dtype() == DType::Float32)
      w.float_zero_points = constant_input(ex, b, 3, "zero_points", DType::Float32, w.n * w.blocks).data<float>();
    else
      w.zero_points =
          constant_input(ex, b, 3, "zero_points", DType::UInt8, w.n * ((w.blocks * w.bits + 7) / 8)).data<uint8_t>();
  }
  return w;
}

std::string add_constant(NodeBuilder& b, const Tensor& t) {
  onnx::TensorProto p;
  tensor_to_proto(t, p);
  return b.constant(std::move(p));
}

// DequantizeLinear(codes [K, N], scales [blocks, N], zero points [blocks, N], axis 0, block_size).
std::string blocked_dequantize(NodeBuilder& b, const PackedWeight& w) {
  const DType storage = w.bits == 4 ? DType::UInt4 : DType::UInt8;
  Tensor codes(storage, {w.k, w.n}), scales(DType::Float32, {w.blocks, w.n}), zero_points(storage, {w.blocks, w.n});
  auto* c = static_cast<uint8_t*>(codes.raw());
  for (int64_t row = 0; row < w.k; ++row)
    for (int64_t col = 0; col < w.n; ++col) c[row * w.n + col] = static_cast<uint8_t>(w.code(row, col));
  auto* s = scales.data<float>();
  auto* z = static_cast<uint8_t*>(zero_points.raw());
  for (int64_t blk = 0; blk < w.blocks; ++blk)
    for (int64_t col = 0; col < w.n; ++col) {
      s[blk * w.n + col] = w.scale(blk, col);
      z[blk * w.n + col] = static_cast<uint8_t>(w.zero_point(blk, col));
    }
  return b.add("DequantizeLinear", {add_constant(b, codes), add_constant(b, scales), add_constant(b, zero_points)},
               {NodeBuilder::attr("axis", int64_t{0}), NodeBuilder::attr("block_size", w.block_size)});
}

// The float32 weight [K, N]: (code - zero point) * scale.
std::string float_weight(NodeBuilder& b, const PackedWeight& w) {
  Tensor weight(DType::Float32, {w.k, w.n});
  auto* out = weight.data<float>();
  for (int64_t row = 0; row < w.k; ++row) {
    const int64_t blk = row / w.block_size;
    for (int64_t col = 0; col < w.n; ++col) {
      const float zp = w.float_zero_points ? w.float_zero_points[col * w.blocks + blk]
                                           : static_cast<float>(w.zero_point(blk, col));
      out[row * w.n + col] = (static_cast<float>(w.code(row, col)) - zp) * w.scale(blk, col);
    }
  }
  return add_constant(b, weight);
}

}  // namespace

void matmul_nbits(ContribExpander& ex, NodeBuilder& b) {
  b.expect_inputs(3, 6);
  b.require_inputs({0, 1, 2});
  b.forbid_inputs(4, 4, "g_idx");
  const PackedWeight w = read_packed(ex, b);
  const bool blocked = b.opset() >= kMinBlockedDequantizeOpset && !w.float_zero_points;
  auto weight = blocked ? blocked_dequantize(b, w) : float_weight(b, w);
  auto y = b.add("MatMul", {b.in(0), weight}, {}, b.has_in(5) ? "" : b.out(0));
  if (b.has_in(5)) b.add("Add", {y, b.in(5)}, {}, b.out(0));
}

}  // namespace fusor::contrib
