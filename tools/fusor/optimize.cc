// fusor optimize: writes the fused model as ONNX (include/fusor/optimize.h, docs/optimize.md);
// when the inputs had to be written with fixed dims, a warning says which items and how to keep
// the model shape-generic.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "fusor/optimize.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct OptimizeArgs {
  ModelArgs model;
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

void optimize(const OptimizeArgs& a) {
  check_output_path(a.output);
  a.model.apply_threads();
  Engine engine = Engine::load(a.model.model);
  auto dims = bind_dims(engine, a.model.parsed_shapes(), a.model.batch(), a.model.seq);
  OptimizeResult r = at_default_dims_explained(engine, a.model, [&] {
    return optimize_to_onnx(engine, dims, a.model.session_options(engine, a.model.model), a.output);
  });
  if (!r.baked_items.empty())
    std::cerr << "fusor: warning: " << r.baked_items.size() << " items (first: " << r.baked_items.front()
              << ") hold values computed for the bound dims, so the inputs are written with fixed shapes; for a "
                 "model that runs at any batch and length, switch their pass off with --config (e.g. "
                 "fusion.fuse_attention: false)\n";

  std::map<std::string, int> kinds;
  for (const OptimizedItem& item : r.fused) ++kinds[item.kind];
  std::string by_kind;
  for (const auto& [kind, count] : kinds) by_kind += (by_kind.empty() ? " (" : ", ") + kind + " " + std::to_string(count);
  if (!by_kind.empty()) by_kind += ")";
  std::cout << "optimized " << a.model.model << ": " << r.nodes_before << " nodes -> " << r.nodes_after << ", "
            << r.fused.size() << " items fused" << by_kind << ", " << r.declined.size() << " declined; wrote "
            << a.output << (r.baked_items.empty() ? " (symbolic input dims)" : " (fixed input dims)") << "\n";
  for (const OptimizedItem& item : r.fused)
    std::cout << "  fused " << item.kind << " " << item.name << " (" << item.nodes << " nodes)\n";
  for (const DeclinedFusion& d : r.declined) std::cout << "  declined " << d.pass << " at " << d.at << ": " << d.reason << "\n";
}

}  // namespace

void add_optimize_command(CLI::App& app) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app.add_subcommand("optimize", "Write the fused model as ONNX (fused items as functions)");
  args->model.add_to(*cmd, {.batch_help = "Binds the leading symbolic dimension while fusing",
                            .seq_help = "Binds the other symbolic dimensions while fusing"});
  cmd->add_option("-o,--output", args->output, "The ONNX file to write")->required();
  cmd->callback([args] { optimize(*args); });
}

}  // namespace fusor::cli
