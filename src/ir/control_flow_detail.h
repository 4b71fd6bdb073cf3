// Shared by the control-flow evaluators (control_flow.cc, control_loop.cc, control_scan.cc):
// the per-op entry points and slicing/stacking of values that may or may not be known.
#pragma once
#include "ir/control_flow.h"

namespace fusor::control {

std::vector<KnownValue> eval_if(const Node& n, std::span<const KnownValue> in, EvaluateFn evaluate);
std::vector<KnownValue> eval_loop(const Node& n, std::span<const KnownValue> in, EvaluateFn evaluate);
std::vector<KnownValue> eval_scan(const Node& n, std::span<const KnownValue> in, EvaluateFn evaluate);

// The subgraph attribute `name` of `n`; throws naming the node when it is absent.
const Graph& subgraph(const Node& n, const char* name);

// The slice at `index` along `axis` (that axis removed); known when `v` is.
KnownValue take_along(const KnownValue& v, int64_t axis, int64_t index);

// Stacks per-iteration parts of type `part` along a new axis `axis` (0..rank of part): the part
// of iteration t lands at t, or at count-1-t when `reverse`. Known when every part is known
// (`parts` empty or shorter than `count` means unknown).
KnownValue stack_along(const std::vector<Tensor>& parts, const TensorType& part, int64_t count, int64_t axis,
                       bool reverse);

// A rank-0 tensor holding `v`.
Tensor scalar_int64(int64_t v);
Tensor scalar_bool(bool v);

}  // namespace fusor::control
