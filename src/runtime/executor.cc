#include "runtime/executor.h"

#include <chrono>
#include <cstring>

namespace fusor {

Executor::Executor(const Plan& plan) : plan_(plan), slots_(plan.types.size()) {
  for (size_t v = 0; v < slots_.size(); ++v)
    if (plan.is_constant(static_cast<int>(v))) slots_[v] = plan.constants[v];
  for (const Step& s : plan.steps)
    for (int v : s.outputs)
      if (v >= 0) slots_[static_cast<size_t>(v)] = Tensor(plan.types[static_cast<size_t>(v)].dtype,
                                                           plan.types[static_cast<size_t>(v)].dims);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  const Graph& g = *plan_.graph;
  if (inputs.size() != g.inputs.size())
    throw Error("expected " + std::to_string(g.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    size_t id = static_cast<size_t>(g.inputs[i]);
    const TensorType& want = plan_.types[id];
    if (inputs[i].dtype() != want.dtype || inputs[i].dims() != want.dims)
      throw Error("input '" + g.values[id].name + "' must be " + dtype_name(want.dtype) + " " +
                  dims_to_string(want.dims) + ", got " + dtype_name(inputs[i].dtype()) + " " +
                  dims_to_string(inputs[i].dims()));
    if (!plan_.is_constant(static_cast<int>(id))) slots_[id] = inputs[i];
    else if (std::memcmp(inputs[i].raw(), slots_[id].raw(), inputs[i].nbytes()) != 0)
      throw Error("input '" + g.values[id].name + "' was frozen when the session was built and cannot change");
  }
  std::vector<Tensor> ins, outs;
  for (size_t si = 0; si < plan_.steps.size(); ++si) {
    const Step& s = plan_.steps[si];
    ins.clear();
    outs.clear();
    for (int v : s.inputs) ins.push_back(v >= 0 ? slots_[static_cast<size_t>(v)] : Tensor());
    for (int v : s.outputs) outs.push_back(v >= 0 ? slots_[static_cast<size_t>(v)] : Tensor());
    if (hook_) {
      auto t0 = std::chrono::steady_clock::now();
      s.kernel->run(ins, outs);
      hook_(si, s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    } else {
      s.kernel->run(ins, outs);
    }
  }
  std::vector<Tensor> result;
  for (int v : g.outputs) result.push_back(slots_[static_cast<size_t>(v)].clone());
  for (int id : g.inputs)  // drop the caller's buffers
    if (!plan_.is_constant(id)) slots_[static_cast<size_t>(id)] = Tensor();
  return result;
}

}  // namespace fusor
