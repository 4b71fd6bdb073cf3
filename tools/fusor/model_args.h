// Options shared by every subcommand that runs a model: shapes, batch, seq, threads, config;
// fusor serve takes its --config and --threads from here too.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fusor/config.h"
#include "fusor/engine.h"

namespace fusor::cli {

// How a subcommand binds the model's symbolic dims: --batch the leading one, --seq the others.
struct DimFlags {
  enum class Batch { One, List, None };
  Batch batch = Batch::One;  // List: bench's sizes "1,8,32"; None: tune, whose requests are one row
  int64_t seq = 128;         // --seq's default
  std::string batch_help = "Binds the leading symbolic dimension";
  std::string seq_help = "Binds the other symbolic dimensions";
};

struct ModelArgs {
  std::string model;
  std::vector<std::string> shapes;  // NAME=d0,d1,...
  std::vector<int64_t> batches = {1};  // --batch: one size, or bench's list
  int64_t seq = 128;                   // --seq (DimFlags::seq unless given)
  bool seq_given = false;              // --seq was on the command line
  int threads = 0;
  bool reference = false;
  bool mem_guard = false;
  bool no_mem_reuse = false;
  bool no_fusion = false;
  // --config FILE, loaded and validated while the command line is parsed (a bad file fails
  // before the model loads); all defaults without --config.
  std::string config_path;
  Config config;

  // Registers the model positional, --shape, --batch/--seq as `dims` says, the session switches
  // and --config. A bad --batch, --seq or --config value fails while parsing, as a one-line
  // fusor::Error (exit 1), before the model loads.
  void add_to(CLI::App& cmd, const DimFlags& dims = {});
  // fusor serve's share: --config and --threads only (its models come from --model NAME=PATH).
  void add_config_and_threads(CLI::App& cmd, const std::string& config_help, const std::string& threads_help);
  int64_t batch() const { return batches.front(); }
  // Parses --shape values; throws fusor::Error on a malformed one.
  std::map<std::string, Dims> parsed_shapes() const;
  // The flags and the config together. A switch is on only when both leave it on: flags such as
  // --no-mem-reuse can turn an optimization off, never back on against the config.
  SessionOptions session_options() const;
  // The same, with the precision gate's saved verdict for `model_path` applied (its rollbacks
  // join fusion.disabled, docs/check.md). With --config and precision_check strict or relaxed,
  // a missing verdict runs the gate first and saves it.
  SessionOptions session_options(const Engine& engine, const std::string& model_path) const;
  // `fusion` with the saved precision verdict for it applied (the gate run first with --config),
  // as session_options(engine, path) applies the top-level one: for serve.matrix's entries.
  FusionConfig gated(const Engine& engine, const std::string& model_path, FusionConfig fusion) const;
  // Sets the OpenMP thread count (shared with oneDNN) when --threads was given.
  void apply_threads() const;

 private:
  void add_config(CLI::App& cmd, const std::string& help);
};

// Engine::bind_dims. The engine's messages name no flag, so the two mistakes --shape fixes (a
// name that is no input, an input without a declared shape) are reported here in its terms.
std::map<std::string, Dims> bind_dims(const Engine& engine, const std::map<std::string, Dims>& shapes, int64_t batch,
                                      int64_t seq);

// Whether an input has a symbolic dimension past its first: one --seq binds.
bool has_symbolic_length(const Engine& engine);

// Runs `plan` (building a session at dims bind_dims gave). A model that cannot run at --seq's
// default (CLIP's text encoder holds 77 positions; 128 fails to broadcast) gets the error with a
// note that the length was a default and how to give one.
template <class F>
auto at_default_dims_explained(const Engine& engine, const ModelArgs& args, F&& plan) -> decltype(plan()) {
  try {
    return plan();
  } catch (const Error& e) {
    if (e.kind() == ErrorKind::UnsupportedOp || args.seq_given || !args.shapes.empty()) throw;
    if (!has_symbolic_length(engine)) throw;
    throw Error(std::string(e.what()) + " (the inputs' symbolic lengths were bound to --seq's default, " +
                    std::to_string(args.seq) + ": give --seq N or --shape NAME=DIMS that the model takes)",
                e.kind());
  }
}

// The model file a MODEL path names: a folder's model.onnx (or the decoder file its
// genai_config.json names); a file as given. A folder without one is a one-line fusor::Error.
std::string model_file_in(const std::string& path);
// Throws a one-line fusor::Error when `output` (a report `flag` writes) is one of the files the
// command reads: the model file, its external data, its saved verdicts, or one of `inputs` (a
// --config, a --tuned file). `tune -o model.onnx` replaced a 46 MB model with 3 KB of YAML, and
// `inspect --json model.onnx.data` its weights.
void refuse_writing_over_model(const std::string& output, const std::string& model, const std::string& flag,
                               const std::vector<std::string>& inputs = {});
// The same for a command without a model (plan): `output` must be none of `inputs`.
void refuse_writing_over_inputs(const std::string& output, const std::string& flag, const std::vector<std::string>& inputs);
// model_file_in as a MODEL argument's transform: a folder without a model fails while parsing.
CLI::Validator model_folder_to_file();

// "1,8,32" -> {1, 8, 32}; nothing unless every value is a positive integer.
std::optional<std::vector<int64_t>> positive_integers_in(const std::string& text);
// The same, throwing fusor::Error that names `what` on a malformed list.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& what);
// "8" -> 8; exactly one positive integer.
int64_t one_positive(const std::string& text, const std::string& what);

}  // namespace fusor::cli
