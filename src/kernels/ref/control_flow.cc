// Reference kernels of If, Loop and Scan: the subgraphs run with every input known, node by node
// in reference kernels (ir/control_flow.h), and their results are copied into the outputs the
// plan allocated from the same evaluation at plan time.
#include <cstring>

#include "ir/control_flow.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

void run_control(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  std::vector<KnownValue> known;
  for (const Tensor& t : inputs) known.push_back({{t.dtype(), t.dims()}, t});
  std::vector<KnownValue> result = evaluate_control(node, known, evaluate);
  for (size_t o = 0; o < outputs.size() && o < result.size(); ++o) {
    if (!outputs[o].defined()) continue;
    const Tensor& r = result[o].value;
    if (!r.defined() || r.dtype() != outputs[o].dtype() || r.dims() != outputs[o].dims())
      throw Error(node.describe() + ": output " + std::to_string(o) + " is " +
                  (r.defined() ? dims_to_string(r.dims()) : std::string("unknown")) + " at run time, the plan has " +
                  dims_to_string(outputs[o].dims()));
    if (r.nbytes()) std::memcpy(outputs[o].raw(), r.raw(), r.nbytes());
  }
}

}  // namespace

void If(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  run_control(node, inputs, outputs);
}
void Loop(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  run_control(node, inputs, outputs);
}
void Scan(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  run_control(node, inputs, outputs);
}

}  // namespace fusor::ref
