// An Einsum equation bound to its operands' shapes: every label (and every broadcast ellipsis
// dim) becomes one loop axis, output axes first. Shared by the shape function, which reports bad
// equations at load, and the reference kernel, which walks the axes.
#pragma once
#include <string>
#include <vector>

#include "ir/graph.h"

namespace fusor {

struct EinsumAxes {
  Dims sizes;                                  // every axis: output axes, then summed axes
  size_t output_rank = 0;                      // the first output_rank axes are the output's dims
  std::vector<std::vector<int64_t>> strides;   // per operand, its element stride along each axis
                                               // (0 where absent or broadcast; a label repeated in
                                               // one operand adds its strides: a diagonal)
  Dims output_dims() const { return Dims(sizes.begin(), sizes.begin() + static_cast<long>(output_rank)); }
};

// Parses `equation` ("ij,jk->ik", "...ii->...i", implicit "ij,jk") against the operands' dims;
// throws naming `node` on a malformed equation or mismatched sizes.
EinsumAxes einsum_axes(const Node& node, const std::string& equation, const std::vector<Dims>& operands);

}  // namespace fusor
