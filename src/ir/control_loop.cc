// Loop: runs its body iteration by iteration. A plan needs every shape, and a Loop's scan
// outputs are as long as its iteration count, so the count must be known without the run's
// data: the trip count M and the condition inputs must be plan-time constants, and the body's
// condition output must fold in every iteration (typically Identity of its condition input, or
// a function of constants and the iteration number). A count that depends on the data is refused
// with an error that says so.
#include <algorithm>

#include "ir/control_flow_detail.h"
#include "ir/data_dependent.h"
#include "ir/shape_util.h"

namespace fusor::control {
namespace {

// Plan-time unrolling binds the body once per iteration: bound the work and catch endless loops.
constexpr int64_t kMaxIterations = 1 << 20;

bool known_scalar(const KnownValue& v) { return v.value.defined() && v.value.numel() == 1; }

bool reads(const Graph& g, int value) {
  for (const Node& inner : g.nodes)
    if (std::find(inner.inputs.begin(), inner.inputs.end(), value) != inner.inputs.end()) return true;
  return std::find(g.outputs.begin(), g.outputs.end(), value) != g.outputs.end();
}

bool all_unknown(std::span<const KnownValue> vs) {
  return std::none_of(vs.begin(), vs.end(), [](const KnownValue& v) { return v.value.defined(); });
}

bool same_types(std::span<const KnownValue> a, std::span<const KnownValue> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const KnownValue& x, const KnownValue& y) {
    return x.type.dtype == y.type.dtype && x.type.dims == y.type.dims;
  });
}

}  // namespace

std::vector<KnownValue> eval_loop(const Node& n, std::span<const KnownValue> in, EvaluateFn evaluate) {
  const Graph& body = subgraph(n, "body");
  const size_t outer = outer_input_count(n);
  if (in.size() < 2 + outer) fail(n, "needs inputs M and cond (either may be empty)");
  const size_t carried = in.size() - 2 - outer;
  if (body.inputs.size() != in.size())
    fail(n, "body has " + std::to_string(body.inputs.size() - std::min(body.inputs.size(), outer)) +
                " inputs, expected " + std::to_string(2 + carried) + " (iteration number, condition, " +
                std::to_string(carried) + " carried values)");
  if (body.outputs.size() < 1 + carried)
    fail(n, "body has " + std::to_string(body.outputs.size()) + " outputs, expected at least " +
                std::to_string(1 + carried) + " (condition, " + std::to_string(carried) + " carried values)");
  const size_t scans = body.outputs.size() - 1 - carried;
  if (n.outputs.size() != carried + scans)
    fail(n, "has " + std::to_string(n.outputs.size()) + " outputs, its body gives " + std::to_string(carried) +
                " carried values and " + std::to_string(scans) + " scan outputs");

  std::optional<int64_t> trips;
  if (in[0].type.dtype != DType::Undefined) {
    if (!known_scalar(in[0]))  // the engine plans such a model per run, with its inputs' values known
      throw DataDependentShape(n.describe() + ": trip count M must be known when the plan is built (it is computed at run time)");
    if (in[0].type.dtype != DType::Int64 && in[0].type.dtype != DType::Int32) fail(n, "trip count M must be int64");
    trips = in[0].value.to_int64_vector()[0];
  }
  bool cond = true;
  if (in[1].type.dtype != DType::Undefined) {
    if (!known_scalar(in[1]))
      fail(n, "condition input is only known at run time; fusor plans static shapes and needs it at plan time");
    cond = in[1].value.scalar_as_double(0) != 0;
  }

  std::vector<KnownValue> state(in.begin() + 2, in.begin() + 2 + static_cast<std::ptrdiff_t>(carried));
  const auto captured = in.subspan(2 + carried);
  const bool iteration_read = reads(body, body.inputs[0]);
  std::vector<TensorType> scan_types(scans);
  std::vector<std::vector<Tensor>> scan_parts(scans);
  int64_t count = 0;
  auto body_args = [&](int64_t i) {
    std::vector<KnownValue> args{{{DType::Int64, {}}, scalar_int64(i)}, {{DType::Bool, {}}, scalar_bool(true)}};
    args.insert(args.end(), state.begin(), state.end());
    args.insert(args.end(), captured.begin(), captured.end());
    return args;
  };
  while ((!trips || count < *trips) && cond) {
    if (count >= kMaxIterations)
      fail(n, "runs over " + std::to_string(kMaxIterations) + " iterations (fusor unrolls loops at plan time)");
    auto out = run_subgraph(n, body, "body", body_args(count), evaluate);
    if (!known_scalar(out[0]))
      fail(n, "the body's condition output is only known at run time, so the iteration count depends on the "
              "data; fusor plans static shapes and cannot run it");
    const bool next = out[0].value.scalar_as_double(0) != 0;
    const auto new_state = std::span<const KnownValue>(out).subspan(1, carried);
    for (size_t k = 0; k < carried; ++k)
      if (new_state[k].type.dtype != state[k].type.dtype)
        fail(n, "carried value " + std::to_string(k) + " changes from " + dtype_name(state[k].type.dtype) + " to " +
                    dtype_name(new_state[k].type.dtype));
    const auto scan_out = std::span<const KnownValue>(out).subspan(1 + carried);
    for (size_t k = 0; k < scans; ++k) {
      if (count == 0) scan_types[k] = scan_out[k].type;
      else if (scan_types[k].dims != scan_out[k].type.dims || scan_types[k].dtype != scan_out[k].type.dtype)
        fail(n, "scan output " + std::to_string(k) + " is " + dims_to_string(scan_types[k].dims) +
                    " in the first iteration and " + dims_to_string(scan_out[k].type.dims) + " in iteration " +
                    std::to_string(count));
      scan_parts[k].push_back(scan_out[k].value);
    }
    // Nothing known changes between iterations: the rest repeat this one's types.
    const bool stationary = !iteration_read && next && trips && all_unknown(state) && all_unknown(new_state) &&
                            all_unknown(scan_out) && same_types(state, new_state);
    state.assign(new_state.begin(), new_state.end());
    cond = next;
    ++count;
    if (stationary) {
      if (*trips > kMaxIterations)
        fail(n, "runs " + std::to_string(*trips) + " iterations, over fusor's limit of " +
                    std::to_string(kMaxIterations));
      count = *trips;
    }
  }
  if (count == 0 && scans > 0) {  // no iteration ran: the body still says the scan outputs' types
    auto out = run_subgraph(n, body, "body", body_args(0), evaluate);
    for (size_t k = 0; k < scans; ++k) scan_types[k] = out[1 + carried + k].type;
  }
  std::vector<KnownValue> result = state;
  for (size_t k = 0; k < scans; ++k) result.push_back(stack_along(scan_parts[k], scan_types[k], count, 0, false));
  return result;
}

}  // namespace fusor::control
