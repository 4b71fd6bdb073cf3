// Reference NonMaxSuppression: writes the (batch, class, box) triples ir/box_suppression.h selects.
#include <cstring>

#include "ir/box_suppression.h"
#include "ir/shape_util.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {

void NonMaxSuppression(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  std::vector<const Tensor*> optional;
  for (size_t i = 2; i < 5; ++i) optional.push_back(i < inputs.size() ? &inputs[i] : nullptr);
  const auto selected = suppress_boxes(inputs[0], inputs[1], suppression_params(node, optional));
  const Dims want = {static_cast<int64_t>(selected.size()), 3};
  if (outputs[0].dims() != want)
    fail(node, "output planned as " + dims_to_string(outputs[0].dims()) + " but the input values give " +
                   dims_to_string(want));
  if (!selected.empty()) std::memcpy(outputs[0].raw(), selected.data(), selected.size() * 3 * sizeof(int64_t));
}

}  // namespace fusor::ref
