// An executable kernel: one step of a Plan. Kernels are built once per plan (after shapes are
// bound), so they can pack weights and create oneDNN primitives up front; run() does only the
// work. Every optimized kernel has a plain twin: the reference kernel of the same node.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Outputs arrive allocated with their planned shapes.
  virtual void run(std::span<const Tensor> inputs, std::span<Tensor> outputs) = 0;
  // Names carry parameters: "matmul_f32_onednn", "add_f32_avx512", "ref.Softmax".
  virtual std::string name() const = 0;
};

// Everything kernel selection may look at for one node, with shapes bound.
struct KernelRequest {
  const Node& node;
  std::span<const TensorType> inputs;
  std::span<const Tensor* const> constants;  // plan-time constant inputs (weights), or nullptr
  std::span<const TensorType> outputs;
};

// Wraps the node's reference kernel from the op table.
std::unique_ptr<Kernel> make_reference_kernel(const Node& node);

}  // namespace fusor
