// fusor run: one inference; writes each output as DIR/<name>.npy and prints a summary.
#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "commands.h"
#include "fusor/npy.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct RunArgs {
  ModelArgs model;
  std::vector<std::string> inputs;  // NAME=FILE.npy
  std::string output_dir = "out";
};

std::map<std::string, Tensor> read_inputs(const Engine& engine, const std::vector<std::string>& specs) {
  std::map<std::string, Tensor> out;
  auto infos = engine.inputs();
  for (const auto& spec : specs) {
    auto eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) throw Error("--input '" + spec + "' must look like NAME=FILE.npy");
    std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    auto info = std::find_if(infos.begin(), infos.end(), [&](const TensorInfo& i) { return i.name == name; });
    if (info == infos.end()) throw Error("--input names '" + name + "', which is not a model input");
    Tensor t = read_npy(path);
    if (t.dtype() != info->dtype)
      throw Error("input '" + name + "' must be " + dtype_name(info->dtype) + ", but " + path + " holds " +
                  dtype_name(t.dtype()));
    out[name] = t;
  }
  return out;
}

void summarize(const std::string& name, const Tensor& t, const std::string& path) {
  double sum = 0, max_abs = 0;
  bool finite = true;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = t.scalar_as_double(i);
    finite = finite && std::isfinite(x);
    sum += x;
    max_abs = std::max(max_abs, std::fabs(x));
  }
  std::cout << "  " << name << "  " << dtype_name(t.dtype()) << " " << dims_to_string(t.dims())
            << "  mean " << (t.numel() ? sum / static_cast<double>(t.numel()) : 0.0) << "  max|x| " << max_abs
            << (finite ? "" : "  (contains NaN/Inf)") << "  -> " << path << "\n";
}

// Each output's file name (without .npy): its name, with / \\ and : made _. A name that needs no
// change keeps its own file; one that maps onto a taken name ("y:0" beside "y_0") gets a number.
std::map<std::string, std::string> output_files(const std::map<std::string, Tensor>& outputs) {
  auto safe = [](std::string name) {
    for (char& c : name)
      if (c == '/' || c == '\\' || c == ':') c = '_';
    return name;
  };
  std::map<std::string, std::string> files;
  std::set<std::string> taken;
  for (const auto& [name, t] : outputs)
    if (safe(name) == name) taken.insert(files[name] = name);
  for (const auto& [name, t] : outputs) {
    if (files.count(name)) continue;
    std::string file = safe(name);
    for (int n = 2; !taken.insert(file).second; ++n) file = safe(name) + "_" + std::to_string(n);
    files[name] = file;
  }
  return files;
}

void run(const RunArgs& a) {
  a.model.apply_threads();
  Engine engine = Engine::load(a.model.model);
  auto given = read_inputs(engine, a.inputs);
  auto shapes = a.model.parsed_shapes();
  for (const auto& [name, t] : given) {
    // --shape for an input given from a file was dropped without a word.
    if (auto s = shapes.find(name); s != shapes.end() && s->second != t.dims())
      throw Error("--shape " + name + "=" + dims_to_string(s->second) + " disagrees with its --input file's " +
                      dims_to_string(t.dims()),
                  ErrorKind::InvalidArgument);
    shapes[name] = t.dims();
  }
  auto dims = bind_dims(engine, shapes, a.model.batch(), a.model.seq);
  auto feeds = engine.sample_inputs(dims);
  for (const auto& [name, t] : given) feeds[name] = t;

  Session session = at_default_dims_explained(
      engine, a.model, [&] { return engine.session(dims, a.model.session_options(engine, a.model.model)); });
  auto outputs = session.run(feeds);

  std::error_code ec;
  std::filesystem::create_directories(a.output_dir, ec);
  if (ec) throw Error("cannot create the output folder '" + a.output_dir + "': " + ec.message());
  std::cout << a.model.model << ": " << engine.node_count() << " nodes, " << session.kernels_per_inference()
            << " kernels (" << (a.model.reference ? "reference" : "fast") << " executor)\n";
  const std::map<std::string, std::string> files = output_files(outputs);
  for (const auto& [name, t] : outputs) {
    std::string path = (std::filesystem::path(a.output_dir) / (files.at(name) + ".npy")).string();
    write_npy(path, t);
    summarize(name, t, path);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd = app.add_subcommand("run", "Run one inference and write the outputs as .npy files");
  args->model.add_to(*cmd);
  cmd->add_option("--input", args->inputs, "Input from a file, NAME=FILE.npy (repeatable); others are generated");
  cmd->add_option("--output-dir", args->output_dir, "Where outputs are written");
  cmd->callback([args] { run(*args); });
}

}  // namespace fusor::cli
