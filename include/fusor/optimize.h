// Optimizing a model for export (docs/optimize.md): the fusion passes run for one binding of the
// model's dims, and the plan's graph is written back as ONNX, fused items as model-local
// functions in domain "fusor".
//
//   auto dims = engine.bind_dims({}, 1, 128);
//   fusor::OptimizeResult r = fusor::optimize_to_onnx(engine, dims, {}, "model.fused.onnx");
//
// Invariants:
// - The graph written is the plan's: items whose kernel declines the bound shapes are already
//   inlined again, so the file computes what a session with these options computes.
// - Input dims stay symbolic, so the file runs at any batch and length, unless a pass wrote
//   values computed for the bound dims into the graph (the attention pass freezes reshape
//   targets): then the inputs are written with the bound dims fixed, and baked_items names the
//   items that hold such values.
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "fusor/engine.h"

namespace fusor {

struct OptimizedItem {
  std::string kind;   // the fused node's op type: LayerNorm, Attention, Elementwise, ...
  std::string name;   // stable item name, as fusion.disabled and the gate use it
  size_t nodes = 0;   // source nodes it replaced
};

struct DeclinedFusion {
  std::string pass;
  std::string at;      // the first node the pass looked at ("?" when none)
  std::string reason;
};

struct OptimizeResult {
  size_t nodes_before = 0, nodes_after = 0;
  std::vector<OptimizedItem> fused;
  std::vector<DeclinedFusion> declined;
  // "OpType name" of each fused item holding values computed for the bound dims; non-empty means
  // the file was written with fixed input dims.
  std::vector<std::string> baked_items;
};

// Plans the model for `dims` with `options` and writes the plan's graph to `path`; throws
// fusor::Error when the file cannot be written.
OptimizeResult optimize_to_onnx(const Engine& engine, const std::map<std::string, Dims>& dims,
                                const SessionOptions& options, const std::string& path);

}  // namespace fusor
