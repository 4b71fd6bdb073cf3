// What oneDNN's int8 kernels (MatMulInteger, ConvInteger) can take on this CPU: zero points
// that are zeros, and weights whose u8 x s8 products cannot saturate.
//
// Without VNNI, oneDNN multiplies u8 activations by s8 weights with vpmaddubsw, which adds two
// adjacent products (along the reduction axis) into an int16 with saturation: 255 * (|w0| + |w1|)
// overflows once |w0| + |w1| > 128, and the result is silently wrong (oneDNN's "int8 computation"
// guide; ONNX Runtime's quantization docs tell users to reduce_range the weights for it). With
// VNNI (vpdpbusd) the products accumulate in int32 and nothing saturates. oneDNN's s8 activations
// are shifted to u8 internally, so they are exposed alike.
#pragma once
#include <cstdint>
#include <optional>

#include "fusor/tensor.h"
#include "kernels/kernel.h"

namespace fusor::cpu {

// What MatMulInteger and ConvInteger nodes share (inputs: activations, weights, activation zero
// point, weight zero point; one int32 output), when oneDNN's int8 primitive can take them: u8 or
// s8 activations, constant s8 weights, a scalar activation zero point, and a weight zero point
// that is absent or all zeros. nullopt otherwise (the reference runs).
struct Int8Operands {
  bool activations_signed = false;
  const Tensor* weights = nullptr;
  bool has_zero_point = false;  // input 2, read at run time
};
std::optional<Int8Operands> int8_operands(const KernelRequest& r, Op op);

// Whether oneDNN's effective ISA (ONEDNN_MAX_CPU_ISA may lower it) has VNNI.
bool onednn_int8_has_vnni();

// Whether weights laid out [outer, depth, inner] (depth: the reduction axis) hold two neighbours
// along depth with |w[d]| + |w[d + 1]| > 128, which vpmaddubsw saturates on when it pairs them.
// Every neighbour pair counts, not only those from an even d: for some depths (over 256, 1 or 2
// past a multiple of 4) oneDNN pairs them the other way.
bool int8_weights_may_saturate(const int8_t* w, int64_t outer, int64_t depth, int64_t inner);

}  // namespace fusor::cpu
