#include "plan/memory_plan.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "plan/plan.h"

namespace fusor {
namespace {

size_t aligned(size_t n) {
  return (std::max<size_t>(n, 1) + MemoryPlan::kAlignment - 1) / MemoryPlan::kAlignment * MemoryPlan::kAlignment;
}

bool overlaps(const Lifetime& a, const Lifetime& b) {
  return a.first_step <= b.last_step && b.first_step <= a.last_step;
}

}  // namespace

int alias_root(const Plan& plan, int v) {
  while (plan.alias_of[static_cast<size_t>(v)] >= 0) v = plan.alias_of[static_cast<size_t>(v)];
  return v;
}

MemoryPlan plan_memory(const Plan& plan, const MemoryOptions& options) {
  const Graph& g = *plan.graph;
  const size_t n_values = plan.types.size();
  const int end = static_cast<int>(plan.steps.size());
  MemoryPlan mp;
  mp.offset.assign(n_values, -1);
  mp.bytes.assign(n_values, 0);
  mp.lifetime.assign(n_values, {});
  mp.dying_after.resize(plan.steps.size());

  // Arena values: graph inputs (copied in, so the executor never holds the caller's memory)
  // and every step output that is not a view. Graph inputs are written "before" step 0. Shared
  // inputs stay in the caller's memory.
  std::vector<bool> in_arena(n_values, false);
  for (int v : g.inputs)
    if (!plan.is_constant(v) && !plan.is_shared(v)) {
      in_arena[static_cast<size_t>(v)] = true;
      mp.lifetime[static_cast<size_t>(v)] = {0, 0};
    }
  for (int s = 0; s < end; ++s)
    for (int v : plan.steps[static_cast<size_t>(s)].outputs)
      if (v >= 0 && plan.alias_of[static_cast<size_t>(v)] < 0) {
        in_arena[static_cast<size_t>(v)] = true;
        mp.lifetime[static_cast<size_t>(v)] = {s, s};
      }

  auto extend = [&](int v, int step) {
    if (v < 0 || plan.is_constant(v)) return;
    int root = alias_root(plan, v);
    if (!in_arena[static_cast<size_t>(root)]) return;
    auto& life = mp.lifetime[static_cast<size_t>(root)];
    life.last_step = std::max(life.last_step, step);
  };
  std::vector<bool> read(n_values, false);
  for (int s = 0; s < end; ++s)
    for (int v : plan.steps[static_cast<size_t>(s)].inputs) {
      extend(v, s);
      if (v >= 0) read[static_cast<size_t>(alias_root(plan, v))] = true;
    }
  for (int v : g.outputs) extend(v, end);
  for (size_t v = 0; v < n_values; ++v)
    if (in_arena[v] && !read[v]) mp.lifetime[v].last_step = end;  // never read: keep to the end

  std::vector<int> values;
  for (size_t v = 0; v < n_values; ++v)
    if (in_arena[v]) {
      values.push_back(static_cast<int>(v));
      mp.bytes[v] = aligned(nbytes_of(plan.types[v].dims, plan.types[v].dtype)) + options.guard_bytes;
      mp.naive_bytes += mp.bytes[v];
      const auto& life = mp.lifetime[v];
      if (life.last_step < end) mp.dying_after[static_cast<size_t>(life.last_step)].push_back(static_cast<int>(v));
    }

  // Lower bound: the most bytes live at any one step.
  std::vector<size_t> live(plan.steps.size() + 1, 0);
  for (int v : values) {
    const auto& life = mp.lifetime[static_cast<size_t>(v)];
    for (int s = life.first_step; s <= life.last_step; ++s) live[static_cast<size_t>(s)] += mp.bytes[static_cast<size_t>(v)];
  }

  // Every buffer to place: arena values, then one scratch region per step that asks for one.
  struct Item {
    size_t bytes;
    Lifetime life;
    int64_t* offset;
  };
  std::vector<Item> items;
  for (int v : values)
    items.push_back({mp.bytes[static_cast<size_t>(v)], mp.lifetime[static_cast<size_t>(v)], &mp.offset[static_cast<size_t>(v)]});
  mp.scratch_offset.assign(plan.steps.size(), -1);
  mp.scratch_bytes.assign(plan.steps.size(), 0);
  for (int s = 0; s < end; ++s)
    if (size_t need = plan.steps[static_cast<size_t>(s)].kernel->scratch_bytes()) {
      mp.scratch_bytes[static_cast<size_t>(s)] = aligned(need);
      live[static_cast<size_t>(s)] += aligned(need);
      mp.naive_bytes += aligned(need);
      items.push_back({aligned(need), {s, s}, &mp.scratch_offset[static_cast<size_t>(s)]});
    }
  mp.lower_bound_bytes = live.empty() ? 0 : *std::max_element(live.begin(), live.end());

  if (!options.reuse) {
    for (Item& item : items) {
      *item.offset = static_cast<int64_t>(mp.arena_bytes);
      mp.arena_bytes += item.bytes;
    }
    return mp;
  }

  // Greedy by size, best fit: place the largest first, into the smallest gap between buffers
  // already placed whose lifetimes overlap this one's.
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.bytes > b.bytes; });
  std::vector<const Item*> placed;
  for (Item& item : items) {
    std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of overlapping buffers
    for (const Item* p : placed)
      if (overlaps(item.life, p->life)) busy.emplace_back(static_cast<size_t>(*p->offset), static_cast<size_t>(*p->offset) + p->bytes);
    std::sort(busy.begin(), busy.end());
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, cursor = 0;
    for (const auto& [b, e] : busy) {
      if (b > cursor && b - cursor >= item.bytes && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    if (best == SIZE_MAX) best = cursor;
    *item.offset = static_cast<int64_t>(best);
    mp.arena_bytes = std::max(mp.arena_bytes, best + item.bytes);
    placed.push_back(&item);
  }
  return mp;
}

}  // namespace fusor
