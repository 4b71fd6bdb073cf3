// Reference Size: the input's element count as an int64 scalar; the data is never read.
#include "kernels/ref/reference.h"

namespace fusor::ref {

void Size(const Node&, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  *outputs[0].data<int64_t>() = inputs[0].numel();
}

}  // namespace fusor::ref
