// fusor optimize: runs the fusion passes for one binding of the model's dims and writes the
// fused graph as ONNX (fused items as model-local functions in domain "fusor", see
// docs/optimize.md). The graph written is the plan's: items whose kernel declines the shapes are
// already inlined again. Input dims stay symbolic, so the file runs at any batch and length,
// unless a pass wrote values computed for the bound dims into the graph (the attention pass
// freezes reshape targets): then the inputs are written with those dims fixed, and a warning
// says which items and how to keep the model shape-generic.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "engine/internals.h"
#include "model_args.h"
#include "onnx/exporter.h"

namespace fusor::cli {
namespace {

struct OptimizeArgs {
  ModelArgs model;
  int64_t batch = 1;
  int64_t seq = 128;
  std::string output;
};

// Fails before the model loads when the output folder is missing.
void check_output_path(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (fs::is_directory(path, ec)) throw Error("cannot write model file '" + path + "': it is a directory");
  if (!parent.empty() && !fs::is_directory(parent, ec))
    throw Error("cannot write model file '" + path + "': folder " + parent.string() + " does not exist");
}

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

void optimize(const OptimizeArgs& a) {
  check_output_path(a.output);
  a.model.apply_threads();
  Engine engine = Engine::load(a.model.model);
  auto dims = bind_dims(engine, a.model.parsed_shapes(), a.batch, a.seq);
  Session session = engine.session(dims, a.model.session_options(engine, a.model.model));
  const Plan& plan = plan_of(session);
  auto baked = items_with_plan_time_values(graph_of(engine), *plan.graph);
  if (baked.empty()) {
    export_onnx_file(*plan.graph, a.output);
  } else {
    export_onnx_file(with_fixed_inputs(*plan.graph, dims), a.output);
    std::cerr << "fusor: warning: " << baked.size() << " items (first: " << baked.front()
              << ") hold values computed for the bound dims, so the inputs are written with fixed shapes; for a "
                 "model that runs at any batch and length, switch their pass off with --config (e.g. "
                 "fusion.fuse_attention: false)\n";
  }

  std::map<std::string, int> kinds;
  for (const FusionItem& item : plan.fusion.items) ++kinds[item.kind];
  std::string by_kind;
  for (const auto& [kind, count] : kinds) by_kind += (by_kind.empty() ? " (" : ", ") + kind + " " + std::to_string(count);
  if (!by_kind.empty()) by_kind += ")";
  std::cout << "optimized " << a.model.model << ": " << graph_of(engine).nodes.size() << " nodes -> "
            << plan.graph->nodes.size() << ", " << plan.fusion.items.size() << " items fused" << by_kind
            << ", " << plan.fusion.not_fused.size() << " declined; wrote " << a.output
            << (baked.empty() ? " (symbolic input dims)" : " (fixed input dims)") << "\n";
  for (const FusionItem& item : plan.fusion.items)
    std::cout << "  fused " << item.kind << " " << item.name << " (" << item.nodes.size() << " nodes)\n";
  for (const NotFused& nf : plan.fusion.not_fused)
    std::cout << "  declined " << nf.pass << " at " << (nf.nodes.empty() ? "?" : nf.nodes.front()) << ": "
              << nf.reason << "\n";
}

}  // namespace

void add_optimize_command(CLI::App& app) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app.add_subcommand("optimize", "Write the fused model as ONNX (fused items as functions)");
  args->model.add_to(*cmd);
  cmd->add_option("--batch", args->batch, "Binds the leading symbolic dimension while fusing")->check(CLI::PositiveNumber);
  cmd->add_option("--seq", args->seq, "Binds the other symbolic dimensions while fusing")->check(CLI::PositiveNumber);
  cmd->add_option("-o,--output", args->output, "The ONNX file to write")->required();
  cmd->callback([args] { optimize(*args); });
}

}  // namespace fusor::cli
