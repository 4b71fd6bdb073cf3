// A fused node's types are its body's: bind the body with the node's input types.
#include "ir/bind.h"
#include "ir/op_functions.h"

namespace fusor::shape {

std::vector<TensorType> Fused(const InferContext& ctx) {
  if (!ctx.node.body) throw Error(ctx.node.describe() + ": fused node has no body");
  const Graph& body = *ctx.node.body;
  if (body.inputs.size() != ctx.inputs.size() || body.outputs.size() != ctx.node.outputs.size())
    throw Error(ctx.node.describe() + ": body has " + std::to_string(body.inputs.size()) + " inputs and " +
                std::to_string(body.outputs.size()) + " outputs, the node " +
                std::to_string(ctx.inputs.size()) + " and " + std::to_string(ctx.node.outputs.size()));
  if (!ctx.evaluate) throw Error(ctx.node.describe() + ": binding its body needs an evaluator");
  std::vector<Tensor> frozen;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    frozen.push_back(ctx.constant(i) ? *ctx.constant(i) : Tensor());
  Binding b = bind_graph(body, ctx.inputs, frozen, ctx.evaluate);
  std::vector<TensorType> out;
  for (int v : body.outputs) out.push_back(b.types[static_cast<size_t>(v)]);
  return out;
}

}  // namespace fusor::shape
