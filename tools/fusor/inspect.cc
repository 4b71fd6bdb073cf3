// fusor inspect: what a model is and whether fusor runs it, without running it. Exits 0 when
// every op is supported and the model plans at the given dims, 1 otherwise (a CI check before
// deploying a model).
#include <fstream>
#include <iostream>

#include "commands.h"
#include "fusor/error.h"
#include "fusor/inspect.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct InspectArgs {
  std::string model, json_path;
  std::vector<std::string> shapes;
  int64_t batch = 1, seq = 128;
  bool seq_given = false;
};

void inspect(const InspectArgs& a) {
  InspectOptions options;
  options.batch = a.batch;
  options.seq = a.seq;
  ModelArgs parse;  // reuses --shape's parser
  parse.shapes = a.shapes;
  for (const auto& [name, dims] : parse.parsed_shapes()) options.shapes[name] = std::vector<int64_t>(dims.begin(), dims.end());
  if (!a.json_path.empty()) refuse_writing_over_model(a.json_path, a.model, "--json");
  ModelInspection result = inspect_model(a.model, options);
  std::cout << inspection_text(result);
  if (!a.json_path.empty()) {
    std::ofstream f(a.json_path);
    f << inspection_json(result) << "\n";
    f.close();
    if (!f) throw Error("cannot write " + a.json_path);
  }
  bool symbolic_length = false;  // a dimension past the batch that --seq binds
  for (const InspectedTensor& in : result.inputs)
    for (size_t i = 1; i < in.dims.size(); ++i)
      symbolic_length = symbolic_length || in.dims[i].find_first_not_of("0123456789") != std::string::npos;
  if (!result.not_bound.empty() && result.supported && symbolic_length && !a.seq_given && a.shapes.empty())
    std::cout << "the inputs' symbolic lengths were bound to --seq's default, " << a.seq
              << ": give --seq N or --shape NAME=DIMS that the model takes\n";
  // A model fusor cannot plan (a cycle, missing external data, an opset past the supported ones)
  // fails the gate as an unsupported op does.
  if (!result.supported || !result.not_bound.empty()) throw ExitCode{1};
}

}  // namespace

void add_inspect_command(CLI::App& app) {
  auto args = std::make_shared<InspectArgs>();
  CLI::App* cmd = app.add_subcommand(
      "inspect", "Inputs, opsets, op support, parameters, FLOPs and fusion of a model, without running it");
  cmd->add_option("model", args->model, "ONNX model file, or a folder holding model.onnx")
      ->required()
      ->type_name("MODEL")
      ->transform(model_folder_to_file());
  cmd->add_option("--batch", args->batch, "Binds the leading symbolic dimension (for FLOPs)")
      ->check(positive_integers(Count::One));
  CLI::Option* seq = cmd->add_option("--seq", args->seq, "Binds the other symbolic dimensions (for FLOPs)")
                         ->check(positive_integers(Count::One));
  cmd->add_option("--shape", args->shapes, "Explicit input dims NAME=d0,d1,...")->type_name("NAME=DIMS");
  cmd->add_option("--json", args->json_path, "Also write the inspection as JSON")->check(writable_file());
  cmd->callback([args, seq] {
    args->seq_given = seq->count() > 0;
    inspect(*args);
  });
}

}  // namespace fusor::cli
