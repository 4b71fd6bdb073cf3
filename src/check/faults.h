// Deliberately wrong fused kernels, to prove the precision gate catches what it must
// (`fusor check --inject-fault KIND[@item]`). Each kind wraps the kernel chosen for one fused step:
//   wrong_epsilon      LayerNorm with epsilon 0.1 instead of the model's
//   dropped_bias       a LayerNorm's beta (input 2) read as zeros (a GEMM's bias is packed at plan time)
//   reduced_precision  results rounded to bfloat16, as if accumulated in reduced precision
//   off_by_one_mask    an attention mask read one key position late
//   stale_buffer       every run after the first returns the previous run's result
//   wrong_zero_point   a quantized (int8/uint8) result one step off everywhere, as from a zero
//                      point off by one
//   saturating_product a quantized result clipped where its accumulation is large, as u8 x s8
//                      products saturating vpmaddubsw's int16 pair sums without VNNI
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "fusor/check.h"
#include "kernels/kernel.h"

namespace fusor {

// The wrapper for PlanOptions::wrap_fused_kernel. It injects into one item only:
// the first that fits is remembered by name in `target`, so rebuilt plans keep hitting the same
// item (and stop once it is rolled back). A fault that needs another kernel (wrong_epsilon) asks
// the plan's backend for it.
KernelWrapper make_fault_injector(const FaultSpec& spec, std::shared_ptr<std::string> target);

}  // namespace fusor
