#include "plan/schedule.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "plan/memory_plan.h"
#include "plan/plan.h"

namespace fusor {

namespace {

std::vector<int> greedy_order(const Plan& plan) {
  const size_t n = plan.steps.size();
  const size_t n_values = plan.types.size();
  std::vector<int> producer(n_values, -1);  // step writing each root value
  for (size_t s = 0; s < n; ++s)
    for (int v : plan.steps[s].outputs)
      if (v >= 0) producer[static_cast<size_t>(v)] = static_cast<int>(s);

  auto bytes_of = [&](int v) {
    const TensorType& t = plan.types[static_cast<size_t>(v)];
    return static_cast<int64_t>(nbytes_of(t.dims, t.dtype));
  };
  // Readers per root value, counted per step (a step reading x twice counts once).
  std::vector<int> readers_left(n_values, 0);
  std::vector<std::vector<int>> deps(n), roots_read(n);
  for (size_t s = 0; s < n; ++s) {
    for (int v : plan.steps[s].inputs) {
      if (v < 0 || plan.is_constant(v)) continue;
      int root = alias_root(plan, v);
      if (std::find(roots_read[s].begin(), roots_read[s].end(), root) != roots_read[s].end()) continue;
      roots_read[s].push_back(root);
      ++readers_left[static_cast<size_t>(root)];
      // A view's bytes come from its root; the step must wait for the root's producer.
      if (int p = producer[static_cast<size_t>(root)]; p >= 0) deps[s].push_back(p);
    }
  }
  std::vector<bool> keep_alive(n_values, false);  // graph outputs never free
  for (int v : plan.graph->outputs)
    if (v >= 0) keep_alive[static_cast<size_t>(alias_root(plan, v))] = true;

  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> dependents(n);
  for (size_t s = 0; s < n; ++s)
    for (int p : deps[s]) {
      ++waiting[s];
      dependents[static_cast<size_t>(p)].push_back(static_cast<int>(s));
    }
  std::vector<int> ready;
  for (size_t s = 0; s < n; ++s)
    if (waiting[s] == 0) ready.push_back(static_cast<int>(s));

  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    int best = -1;
    int64_t best_gain = INT64_MIN;
    for (int s : ready) {
      int64_t gain = 0;
      for (int root : roots_read[static_cast<size_t>(s)])
        if (readers_left[static_cast<size_t>(root)] == 1 && !keep_alive[static_cast<size_t>(root)]) gain += bytes_of(root);
      for (int v : plan.steps[static_cast<size_t>(s)].outputs)
        if (v >= 0 && plan.alias_of[static_cast<size_t>(v)] < 0) gain -= bytes_of(v);
      if (gain > best_gain || (gain == best_gain && s < best)) {
        best = s;
        best_gain = gain;
      }
    }
    ready.erase(std::find(ready.begin(), ready.end(), best));
    for (int root : roots_read[static_cast<size_t>(best)]) --readers_left[static_cast<size_t>(root)];
    for (int d : dependents[static_cast<size_t>(best)])
      if (--waiting[static_cast<size_t>(d)] == 0) ready.push_back(d);
    order.push_back(best);
  }
  if (order.size() != n) throw Error("internal: step dependencies form a cycle");
  return order;
}

void permute_steps(Plan& plan, const std::vector<int>& order) {
  std::vector<Step> steps;
  steps.reserve(order.size());
  for (int s : order) steps.push_back(std::move(plan.steps[static_cast<size_t>(s)]));
  plan.steps = std::move(steps);
}

}  // namespace

void schedule_for_memory(Plan& plan) {
  // Greedy is not optimal (on ResNet-18 it raises the peak), so the new order is kept only
  // when it lowers the liveness lower bound.
  const size_t before = plan_memory(plan, {}).lower_bound_bytes;
  std::vector<int> order = greedy_order(plan);
  permute_steps(plan, order);
  if (plan_memory(plan, {}).lower_bound_bytes < before) return;
  std::vector<int> inverse(order.size());
  for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int>(i);
  permute_steps(plan, inverse);
}

}  // namespace fusor
