#include "model_args.h"


#include <algorithm>
#include <filesystem>
#include <cstdio>
#include <sstream>

#include "fusor/check.h"
#include "fusor/decoder.h"
#include "fusor/threads.h"

namespace fusor::cli {

void ModelArgs::add_to(CLI::App& cmd, const DimFlags& dims) {
  cmd.add_option("model", model, "ONNX model file, or a folder holding model.onnx")
      ->required()
      ->transform(model_folder_to_file());
  cmd.add_option("--shape", shapes, "Input shape, NAME=d0,d1,... (repeatable)");
  cmd.add_option("--threads", threads, "Threads (OpenMP, shared with oneDNN)")->check(CLI::Range(1, 1024));
  cmd.add_flag("--reference", reference, "Use the plain reference kernels (the ground truth)");
  cmd.add_flag("--mem-guard", mem_guard, "Check canaries after each kernel and poison dead buffers");
  cmd.add_flag("--no-mem-reuse", no_mem_reuse, "Give every intermediate its own buffer");
  cmd.add_flag("--no-fusion", no_fusion, "Run the unfused plan (every fusion pass off)");
  add_config(cmd, "YAML config file: one switch per optimization (docs/config.md)");
  // The parsers throw fusor::Error from inside parsing; main prints it as one line and exits 1.
  if (dims.batch == DimFlags::Batch::One)
    cmd.add_option_function<std::string>(
           "--batch", [this](const std::string& text) { batches = {one_positive(text, "--batch")}; }, dims.batch_help)
        ->type_name("INT:POSITIVE");
  if (dims.batch == DimFlags::Batch::List)
    cmd.add_option_function<std::string>(
           "--batch", [this](const std::string& text) { batches = parse_int_list(text, "--batch"); }, dims.batch_help)
        ->type_name("TEXT");
  seq = dims.seq;
  cmd.add_option_function<std::string>(
         "--seq",
         [this](const std::string& text) {
           seq = one_positive(text, "--seq");
           seq_given = true;
         },
         dims.seq_help)
      ->type_name("INT:POSITIVE");
}

void ModelArgs::add_config_and_threads(CLI::App& cmd, const std::string& config_help, const std::string& threads_help) {
  add_config(cmd, config_help);
  cmd.add_option("--threads", threads, threads_help)->check(CLI::Range(1, 1024));
}

void ModelArgs::add_config(CLI::App& cmd, const std::string& help) {
  cmd.add_option_function<std::string>(
         "--config",
         [this](const std::string& path) {
           config_path = path;
           config = load_config(path);
         },
         help)
      ->type_name("FILE");
}

SessionOptions ModelArgs::session_options() const {
  SessionOptions o;
  o.reference = reference;
  o.mem_guard = mem_guard;
  o.mem_reuse = config.mem_reuse && !no_mem_reuse;
  o.reorder = config.kernel.reorder_for_coalesce;
  if (no_fusion) o.fusion.reset();
  else o.fusion = config.fusion;
  return o;
}

SessionOptions ModelArgs::session_options(const Engine& engine, const std::string& model_path) const {
  SessionOptions o = session_options();
  if (!o.fusion || reference) return o;
  o.fusion = gated(engine, model_path, *o.fusion);
  return o;
}

FusionConfig ModelArgs::gated(const Engine& engine, const std::string& model_path, FusionConfig fusion) const {
  // A gate that runs first (with --config) takes the lengths given here (an audio model's
  // samples), at batch 1; else the gate's own.
  const bool gate_if_missing = !config_path.empty();
  std::map<std::string, Dims> gate_dims;
  if (gate_if_missing && (seq_given || !shapes.empty()))
    gate_dims = bind_dims(engine, parsed_shapes(), 1, seq_given ? seq : 16);
  apply_precision_verdict(engine, model_path, fusion, gate_if_missing,
                          [](const std::string& line) { std::fprintf(stderr, "check: %s\n", line.c_str()); },
                          gate_dims);
  return fusion;
}

std::optional<std::vector<int64_t>> positive_integers_in(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    try {
      size_t used = 0;
      long long v = std::stoll(item, &used);
      if (used != item.size() || v <= 0) return std::nullopt;
      out.push_back(v);
    } catch (const std::logic_error&) {
      return std::nullopt;
    }
  }
  if (out.empty()) return std::nullopt;
  return out;
}

void refuse_writing_over_inputs(const std::string& output, const std::string& flag, const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(output, ec)) return;
  for (const std::string& p : inputs)
    if (!p.empty() && fs::equivalent(output, p, ec))
      throw Error(flag + " " + output + " is " + p + ", which this command reads: name another", ErrorKind::InvalidArgument);
}

void refuse_writing_over_model(const std::string& output, const std::string& model, const std::string& flag,
                               const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(output, ec)) return;  // the model is not parsed for its data files unless needed
  const fs::path file = model_file_in(model);
  std::vector<fs::path> own = {file, fs::path(file.string() + ".fusor-verdicts.json")};
  for (const std::string& data : model_data_files(file.string())) own.push_back(data);
  for (const fs::path& p : own)
    if (fs::equivalent(output, p, ec))
      throw Error(flag + " " + output + " is the model's own file " + p.string() + ": name another",
                  ErrorKind::InvalidArgument);
  refuse_writing_over_inputs(output, flag, inputs);
}

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what) {
  auto v = positive_integers_in(text);
  if (!v)
    throw Error(what + ": '" + text + "' must be a comma-separated list of positive integers",
                ErrorKind::InvalidArgument);
  return *v;
}

int64_t one_positive(const std::string& text, const std::string& what) {
  auto v = positive_integers_in(text);
  if (!v || v->size() != 1)
    throw Error(what + ": '" + text + "' must be a positive integer", ErrorKind::InvalidArgument);
  return v->front();
}

std::map<std::string, Dims> ModelArgs::parsed_shapes() const {
  std::map<std::string, Dims> out;
  for (const auto& s : shapes) {
    auto eq = s.find('=');
    if (eq == std::string::npos || eq == 0)
      throw Error("--shape '" + s + "' must look like NAME=d0,d1,...", ErrorKind::InvalidArgument);
    out[s.substr(0, eq)] = parse_int_list(s.substr(eq + 1), "--shape " + s.substr(0, eq));
  }
  return out;
}

std::map<std::string, Dims> bind_dims(const Engine& engine, const std::map<std::string, Dims>& shapes, int64_t batch,
                                      int64_t seq) {
  const std::vector<TensorInfo> inputs = engine.inputs();
  for (const auto& given : shapes) {
    const std::string& name = given.first;
    if (std::none_of(inputs.begin(), inputs.end(), [&](const TensorInfo& in) { return in.name == name; }))
      throw Error("--shape names '" + name + "', which is not a model input", ErrorKind::InvalidArgument);
  }
  for (const TensorInfo& in : inputs)
    if (!in.has_shape && !shapes.count(in.name))
      throw Error("input '" + in.name + "' has no declared shape: give it with --shape", ErrorKind::InvalidArgument);
  return engine.bind_dims(shapes, batch, seq);
}

void ModelArgs::apply_threads() const {
  if (threads > 0) set_compute_threads(threads);
}

bool has_symbolic_length(const Engine& engine) {
  for (const TensorInfo& in : engine.inputs())
    for (size_t i = 1; i < in.dims.size(); ++i)
      if (in.dims[i] < 0) return true;
  return false;
}

std::string model_file_in(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec) ? DecoderSpec::model_file_of(path) : path;
}

CLI::Validator model_folder_to_file() {
  return CLI::Validator(
      [](std::string& path) {
        path = model_file_in(path);
        return std::string();
      },
      "", "model folder");
}

}  // namespace fusor::cli
