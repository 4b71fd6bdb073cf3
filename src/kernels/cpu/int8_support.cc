#include "kernels/cpu/int8_support.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>

#include "kernels/cpu/common.h"

namespace fusor::cpu {

namespace {

bool all_values_zero(const Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.scalar_as_double(i) != 0) return false;
  return true;
}

}  // namespace

std::optional<Int8Operands> int8_operands(const KernelRequest& r, Op op) {
  if (r.node.op != op || used_outputs(r) != 1 || r.outputs[0].dtype != DType::Int32) return std::nullopt;
  Int8Operands o;
  o.activations_signed = input_is(r, 0, DType::Int8);
  o.weights = constant_input(r, 1);
  if (!(o.activations_signed || input_is(r, 0, DType::UInt8)) || !input_is(r, 1, DType::Int8) || !o.weights)
    return std::nullopt;
  o.has_zero_point = has_input(r, 2);
  if (o.has_zero_point && numel_of(r.inputs[2].dims) != 1) return std::nullopt;
  if (has_input(r, 3) && (constant_input(r, 3) == nullptr || !all_values_zero(*constant_input(r, 3))))
    return std::nullopt;
  return o;
}

bool onednn_int8_has_vnni() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto has = [&](dnnl_cpu_isa_t bits) { return (isa & bits) == static_cast<unsigned>(bits); };
  return has(dnnl_cpu_isa_avx512_core_vnni) || has(dnnl_cpu_isa_avx2_vnni);
}

bool int8_weights_may_saturate(const int8_t* w, int64_t outer, int64_t depth, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d + 1 < depth; ++d)  // every neighbour pair: oneDNN's pairing shifts for some depths
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t at = (o * depth + d) * inner + i;
        if (std::abs(int{w[at]}) + std::abs(int{w[at + inner]}) > 128) return true;
      }
  return false;
}

}  // namespace fusor::cpu
