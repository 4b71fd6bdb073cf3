// Control-flow nodes are typed by evaluating their subgraphs with what is known at plan time
// (ir/control_flow.h): the same code the reference kernels run, so plan and run agree.
#include "ir/control_flow.h"
#include "ir/op_functions.h"
#include "ir/shape_util.h"

namespace fusor::shape {
namespace {

std::vector<TensorType> control_types(const InferContext& ctx) {
  if (!ctx.evaluate) fail(ctx.node, "binding its subgraphs needs an evaluator");
  std::vector<KnownValue> inputs;
  for (size_t i = 0; i < ctx.inputs.size(); ++i)
    inputs.push_back({ctx.inputs[i], ctx.constant(i) ? *ctx.constant(i) : Tensor()});
  std::vector<TensorType> out;
  for (const KnownValue& v : evaluate_control(ctx.node, inputs, ctx.evaluate)) out.push_back(v.type);
  return out;
}

}  // namespace

std::vector<TensorType> If(const InferContext& ctx) { return control_types(ctx); }
std::vector<TensorType> Loop(const InferContext& ctx) { return control_types(ctx); }
std::vector<TensorType> Scan(const InferContext& ctx) { return control_types(ctx); }

}  // namespace fusor::shape
