#include "ir/spectral_params.h"

#include "ir/shape_util.h"

namespace fusor {

int64_t dft_axis(const Node& node, const Tensor* axis_input, int64_t rank) {
  int64_t axis = node.opset >= 20 ? -2 : node.attr_int("axis", 1);
  if (node.opset >= 20 && axis_input && axis_input->defined()) {
    std::vector<int64_t> v = axis_input->to_int64_vector();
    if (v.size() != 1) fail(node, "axis must be a scalar", ErrorKind::InvalidModel);
    axis = v[0];
  }
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a > rank - 2)
    fail(node, "axis " + std::to_string(axis) + " is out of range [-" + std::to_string(rank) + ", " +
                   std::to_string(rank - 2) + "] for an input of rank " + std::to_string(rank), ErrorKind::InvalidModel);
  return a;
}

}  // namespace fusor
