// fusor/optimize.h: the session's plan graph, exported.
#include "fusor/optimize.h"

#include "engine/internals.h"
#include "onnx/exporter.h"
#include "plan/plan.h"

namespace fusor {
namespace {

// Fused nodes that read constants the source model does not have: values the passes computed
// for this binding (folded shapes), valid for these dims only.
std::vector<std::string> items_with_plan_time_values(const Graph& source, const Graph& fused) {
  std::vector<std::string> names;
  for (const Node& n : fused.nodes) {
    if (n.op != Op::Fused) continue;
    for (int v : n.inputs) {
      const Value& val = fused.values[static_cast<size_t>(v)];
      int s = source.find_value(val.name);
      if (val.constant && (s < 0 || !source.values[static_cast<size_t>(s)].constant)) {
        names.push_back(n.op_type + " " + n.name);
        break;
      }
    }
  }
  return names;
}

Graph with_fixed_inputs(Graph g, const std::map<std::string, Dims>& dims) {
  for (int id : g.inputs) {
    Value& v = g.values[static_cast<size_t>(id)];
    Shape shape;
    for (int64_t d : dims.at(v.name)) shape.push_back(Dim{d, ""});
    v.shape = shape;
  }
  return g;
}

}  // namespace

OptimizeResult optimize_to_onnx(const Engine& engine, const std::map<std::string, Dims>& dims,
                                const SessionOptions& options, const std::string& path) {
  Session session = engine.session(dims, options);
  const Plan& plan = plan_of(session);
  OptimizeResult r;
  r.baked_items = items_with_plan_time_values(graph_of(engine), *plan.graph);
  export_onnx_file(r.baked_items.empty() ? *plan.graph : with_fixed_inputs(*plan.graph, dims), path);
  r.nodes_before = graph_of(engine).nodes.size();
  r.nodes_after = plan.graph->nodes.size();
  for (const FusionItem& item : plan.fusion.items) r.fused.push_back({item.kind, item.name, item.nodes.size()});
  for (const NotFused& nf : plan.fusion.not_fused)
    r.declined.push_back({nf.pass, nf.nodes.empty() ? "?" : nf.nodes.front(), nf.reason});
  return r;
}

}  // namespace fusor
