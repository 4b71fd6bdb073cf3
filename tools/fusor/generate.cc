// fusor generate: text (or token ids) after a prompt from a decoder export, greedy or sampled,
// streamed as it is generated, or one JSON object at the end (docs/generate.md).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "commands.h"
#include "fusor/decoder.h"
#include "fusor/error.h"
#include "fusor/generate.h"
#include "fusor/profile.h"
#include "fusor/tokenizer.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct GenerateArgs {
  ModelArgs model;  // --config, --threads, and the session switches below
  std::optional<std::string> prompt;
  std::optional<std::string> prompt_ids;
  int64_t max_new_tokens = 0;
  std::string tokenizer;
  std::optional<float> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k;
  uint64_t seed = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;
  std::vector<std::string> eos_ids;
  bool json = false;
  bool stats = false;
  bool profile = false;
  std::string batch;  // a JSON-lines file of sequences generated together
};

// "1,2,3" -> ids; each a non-negative integer that fits a token id.
std::vector<TokenId> parse_ids(const std::string& text, const std::string& what) {
  std::vector<TokenId> ids;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(item, &used);
    } catch (const std::logic_error&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || v < 0 || v > std::numeric_limits<TokenId>::max())
      throw Error(what + ": '" + text + "' must be a comma-separated list of token ids (non-negative integers)",
                  ErrorKind::InvalidArgument);
    ids.push_back(static_cast<TokenId>(v));
  }
  if (ids.empty()) throw Error(what + ": no token ids", ErrorKind::InvalidArgument);
  return ids;
}

// --tokenizer, else the model's folder when it holds a tokenizer.json; none is fine for
// --prompt-ids without --stop (plain output then prints ids).
std::optional<Tokenizer> load_tokenizer(const GenerateArgs& a, const DecoderSpec& spec) {
  if (!a.tokenizer.empty()) return Tokenizer::load(a.tokenizer);
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(spec.folder) / "tokenizer.json", ec)) return Tokenizer::load(spec.folder);
  // --batch lines of ids need none: a text line says so itself (batch_line).
  if (a.prompt || !a.stop.empty())
    throw Error("no tokenizer.json in " + spec.folder + ": give one with --tokenizer", ErrorKind::InvalidArgument);
  return std::nullopt;
}

GenerateOptions generate_options(const GenerateArgs& a, const DecoderSpec& spec) {
  GenerateOptions o;
  o.max_new_tokens = a.max_new_tokens;
  o.ignore_eos = a.ignore_eos;
  o.stop = a.stop;
  o.eos_ids = spec.eos_ids;
  if (!a.eos_ids.empty()) {
    o.eos_ids.clear();
    for (const std::string& e : a.eos_ids)
      for (TokenId id : parse_ids(e, "--eos-id")) o.eos_ids.push_back(id);
  }
  // The flags set, over the model's generation_config.json (a temperature of 0 is greedy).
  auto knob = [](const std::optional<float>& v) { return v ? std::optional<double>(*v) : std::nullopt; };
  o.sampling = sampling_with_defaults({.temperature = knob(a.temperature),
                                       .top_p = knob(a.top_p),
                                       .repetition_penalty = knob(a.repetition_penalty),
                                       .top_k = a.top_k},
                                      spec.generation_defaults, a.seed);
  o.sampling.validate();
  return o;
}

nlohmann::json result_json(const std::vector<TokenId>& prompt, const GenerateResult& r) {
  auto finite = [](double v) { return std::isfinite(v) ? v : 0.0; };
  return {{"prompt_ids", prompt},
          {"output_ids", r.output_ids},
          {"text", r.text},
          {"finish_reason", finish_reason_name(r.finish_reason)},
          {"ttft_ms", finite(r.ttft_ms)},
          {"tokens_per_s", finite(r.tokens_per_s)}};
}

// One line of a --batch file: {"prompt": TEXT} or {"prompt_ids": [...]}, optionally
// "max_new_tokens" and "start_step" (the step at which it joins the others).
BatchRequest batch_line(const std::string& line, size_t number, const GenerateOptions& defaults,
                        const std::optional<Tokenizer>& tokenizer) {
  const std::string where = "--batch line " + std::to_string(number);
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) throw Error(where + ": not a JSON object", ErrorKind::InvalidArgument);
  for (const auto& [key, value] : j.items())
    if (key != "prompt" && key != "prompt_ids" && key != "max_new_tokens" && key != "start_step")
      throw Error(where + ": unknown field '" + key + "'", ErrorKind::InvalidArgument);
  BatchRequest r;
  r.options = defaults;
  if (j.contains("prompt") == j.contains("prompt_ids"))
    throw Error(where + ": give \"prompt\" (text) or \"prompt_ids\" (one of them)", ErrorKind::InvalidArgument);
  if (j.contains("prompt")) {
    if (!j["prompt"].is_string()) throw Error(where + ": \"prompt\" must be a string", ErrorKind::InvalidArgument);
    if (!tokenizer) throw Error(where + ": a text prompt needs a tokenizer", ErrorKind::InvalidArgument);
    r.prompt = tokenizer->encode(j["prompt"].get<std::string>());
  } else {
    const auto& ids = j["prompt_ids"];
    if (!ids.is_array()) throw Error(where + ": \"prompt_ids\" must be a list of token ids", ErrorKind::InvalidArgument);
    for (const auto& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > std::numeric_limits<TokenId>::max())
        throw Error(where + ": \"prompt_ids\" must hold non-negative integers", ErrorKind::InvalidArgument);
      r.prompt.push_back(static_cast<TokenId>(id.get<int64_t>()));
    }
  }
  if (r.prompt.empty()) throw Error(where + ": the prompt has no tokens", ErrorKind::InvalidArgument);
  for (const char* key : {"max_new_tokens", "start_step"})
    if (j.contains(key) && (!j[key].is_number_integer() || j[key].get<int64_t>() < 0))
      throw Error(where + ": \"" + key + "\" must be a non-negative integer", ErrorKind::InvalidArgument);
  if (j.contains("max_new_tokens")) r.options.max_new_tokens = j["max_new_tokens"].get<int64_t>();
  if (j.contains("start_step")) r.start_step = j["start_step"].get<int64_t>();
  return r;
}

nlohmann::json kind_json(const StepKindProfile& k) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelTime& t : k.kernels)
    kernels.push_back({{"kernel", t.kernel}, {"op", t.op}, {"calls", t.calls}, {"seconds", t.seconds}});
  return {{"steps", k.steps}, {"tokens", k.tokens}, {"seconds", k.seconds}, {"kernels", kernels}};
}

// --profile: the table on stderr, and the numbers in the --json object.
void report_profile(const GenerationProfile& p, nlohmann::json* out) {
  std::fprintf(stderr, "%s", generation_profile_table(p).c_str());
  if (out) (*out)["profile"] = {{"decode", kind_json(p.decode)}, {"prompt", kind_json(p.prompt)}};
}

// --batch: every line's sequence over one DecoderBatch, joined as their start steps say.
void generate_batch_command(const GenerateArgs& a, const Engine& engine, const DecoderSpec& spec,
                            const std::string& model_file) {
  const std::optional<Tokenizer> tokenizer = load_tokenizer(a, spec);
  const GenerateOptions defaults = generate_options(a, spec);
  std::ifstream in(a.batch);
  if (!in) throw Error("cannot read --batch file '" + a.batch + "'", ErrorKind::InvalidArgument);
  std::vector<BatchRequest> requests;
  std::string line;
  for (size_t number = 1; std::getline(in, line); ++number)
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      requests.push_back(batch_line(line, number, defaults, tokenizer));
  if (requests.empty()) throw Error("--batch file '" + a.batch + "' holds no sequences", ErrorKind::InvalidArgument);

  const SessionOptions session = a.model.session_options(engine, model_file);
  DecoderBatchOptions options;
  int64_t longest = 0;
  for (const BatchRequest& r : requests)
    longest = std::max(longest, static_cast<int64_t>(r.prompt.size()) + r.options.max_new_tokens);
  if (spec.context_length > 0) longest = std::min(longest, spec.context_length);
  options.cache_tokens = longest * static_cast<int64_t>(requests.size()) + 16 * static_cast<int64_t>(requests.size());
  options.max_sequences = static_cast<int64_t>(requests.size());  // all may run in one step
  DecoderBatch batch(engine, spec, session, options);
  batch.set_profiling(a.profile);
  const BatchGenerateResult r = generate_batch(batch, requests, tokenizer ? &*tokenizer : nullptr);
  if (a.stats)
    std::fprintf(stderr, "generate: %lld steps, %zu plans built in %.2f s, %lld prompt and %lld new tokens in %.2f s\n",
                 static_cast<long long>(r.steps), batch.plans_built(), batch.plan_seconds(),
                 static_cast<long long>(r.prompt_tokens), static_cast<long long>(r.generated_tokens), r.seconds);
  if (a.profile && !a.json) report_profile(batch.profile(), nullptr);
  if (!a.json) {
    for (size_t i = 0; i < r.results.size(); ++i) {
      std::cout << "[" << i << "] ";
      if (tokenizer) std::cout << r.results[i].text;
      else for (TokenId id : r.results[i].output_ids) std::cout << id << " ";
      std::cout << "\n";
    }
    return;
  }
  nlohmann::json out = {{"sequences", nlohmann::json::array()},
                        {"steps", r.steps},
                        {"prompt_tokens", r.prompt_tokens},
                        {"generated_tokens", r.generated_tokens},
                        {"seconds", r.seconds},
                        {"plans_built", batch.plans_built()},
                        {"plan_seconds", batch.plan_seconds()}};
  for (size_t i = 0; i < r.results.size(); ++i) out["sequences"].push_back(result_json(requests[i].prompt, r.results[i]));
  if (a.profile) report_profile(batch.profile(), &out);
  std::cout << out.dump() << "\n";
}

void generate_command(GenerateArgs& a) {
  if (!a.batch.empty()) {
    if (a.prompt || a.prompt_ids)
      throw Error("--batch gives the prompts: drop --prompt and --prompt-ids", ErrorKind::InvalidArgument);
    if (a.max_new_tokens < 0) throw Error("--max-new-tokens must be 0 or more", ErrorKind::InvalidArgument);
    a.model.apply_threads();
    const std::string model_file = DecoderSpec::model_file_of(a.model.model);
    const Engine engine = Engine::load(model_file);
    generate_batch_command(a, engine, DecoderSpec::describe(engine, model_file), model_file);
    return;
  }
  if (a.prompt.has_value() == a.prompt_ids.has_value())
    throw Error("give the prompt as --prompt TEXT or --prompt-ids 1,2,3 (one of them)", ErrorKind::InvalidArgument);
  if (a.max_new_tokens < 0) throw Error("--max-new-tokens must be 0 or more", ErrorKind::InvalidArgument);
  a.model.apply_threads();
  const std::string model_file = DecoderSpec::model_file_of(a.model.model);
  const Engine engine = Engine::load(model_file);
  const DecoderSpec spec = DecoderSpec::describe(engine, model_file);
  const std::optional<Tokenizer> tokenizer = load_tokenizer(a, spec);
  const GenerateOptions options = generate_options(a, spec);
  const std::vector<TokenId> prompt = a.prompt ? tokenizer->encode(*a.prompt) : parse_ids(*a.prompt_ids, "--prompt-ids");
  if (prompt.empty()) throw Error("the prompt encodes to no tokens", ErrorKind::InvalidArgument);
  check_prompt_fits(static_cast<int64_t>(prompt.size()), spec.context_length);  // before the decoder is built

  DecoderStep decoder(engine, spec, a.model.session_options(engine, model_file));
  decoder.set_profiling(a.profile);
  TokenCallback stream;
  if (!a.json)
    stream = [&](TokenId id, std::string_view text) {
      if (tokenizer) std::cout << text;
      else std::cout << id << " ";
      std::cout.flush();
    };
  const GenerateResult r = generate(decoder, prompt, options, tokenizer ? &*tokenizer : nullptr, stream);
  if (a.stats) {
    const DecoderStep::Stats st = decoder.stats();
    std::fprintf(stderr, "generate: %zu steps, %zu sessions planned in %.2f s\n", st.steps, st.sessions_built,
                 st.plan_seconds);
    if (st.kv_cache)
      std::fprintf(stderr, "generate: paged KV cache, %.1f MiB in %lld blocks of %lld positions, %zu bytes per token, %lld blocks in use\n",
                   static_cast<double>(st.cache.bytes) / (1 << 20), static_cast<long long>(st.cache.blocks),
                   static_cast<long long>(st.cache.block_size), st.cache.bytes_per_token,
                   static_cast<long long>(st.cache.blocks_used));
    else
      std::fprintf(stderr, "generate: plain loop (%s)\n", st.kv_cache_refusal.c_str());
  }
  // The plain loop's steps are not profiled: no table then, but why.
  const bool profiled = a.profile && decoder.stats().kv_cache;
  if (a.profile && !profiled)
    std::fprintf(stderr, "generate: no profile: the plain loop ran (%s)\n", decoder.stats().kv_cache_refusal.c_str());
  if (!a.json) {
    std::cout << "\n" << std::flush;
    if (profiled) report_profile(decoder.profile(), nullptr);
    return;
  }
  nlohmann::json out = result_json(prompt, r);
  if (profiled) report_profile(decoder.profile(), &out);
  if (a.stats) {  // how it ran: the paged cache's memory, or why the plain loop ran
    const DecoderStep::Stats st = decoder.stats();
    out["kv_cache"] = st.kv_cache ? nlohmann::json{{"bytes", st.cache.bytes},
                                                   {"bytes_per_token", st.cache.bytes_per_token},
                                                   {"block_size", st.cache.block_size},
                                                   {"blocks", st.cache.blocks},
                                                   {"blocks_used", st.cache.blocks_used}}
                                  : nlohmann::json{{"refused", st.kv_cache_refusal}};
    out["sessions_built"] = st.sessions_built;
  }
  std::cout << out.dump() << "\n";
}

}  // namespace

void add_generate_command(CLI::App& app) {
  auto args = std::make_shared<GenerateArgs>();
  CLI::App* cmd = app.add_subcommand("generate", "Generate text after a prompt with a decoder model (greedy or sampled)");
  cmd->add_option("model", args->model.model, "Decoder model: a .onnx file or a folder holding model.onnx")->required();
  cmd->add_option("--prompt", args->prompt, "Prompt text (encoded with the tokenizer)");
  cmd->add_option("--prompt-ids", args->prompt_ids, "Prompt as comma-separated token ids")->type_name("IDS");
  cmd->add_option("--max-new-tokens", args->max_new_tokens, "Most tokens to generate after the prompt")->required();
  cmd->add_option("--batch", args->batch,
                  "JSON lines, one sequence each ({\"prompt\" or \"prompt_ids\", \"max_new_tokens\", \"start_step\"}), "
                  "generated together over the paged KV cache")
      ->type_name("FILE");
  cmd->add_option("--tokenizer", args->tokenizer, "tokenizer.json or its folder (default: the model's folder)")
      ->type_name("PATH");
  cmd->add_option("--temperature", args->temperature, "Sample with this temperature (0: greedy)");
  cmd->add_option("--top-k", args->top_k, "Sample among the K most likely tokens");
  cmd->add_option("--top-p", args->top_p, "Sample among the most likely tokens whose probability reaches P");
  cmd->add_option("--repetition-penalty", args->repetition_penalty, "Penalize tokens already in the sequence (1: off)");
  // CLI11 read -1 as 2^64 - 1 and 2^64 as 2^64 - 1: seeds that named other streams ran one.
  cmd->add_option("--seed", args->seed, "Seed of the sampling's random stream")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            if (!text.empty() && text.size() <= 20 && text.find_first_not_of("0123456789") == std::string::npos) {
              try {
                std::stoull(text);
                return "";
              } catch (const std::out_of_range&) {
              }
            }
            return "must be an integer in [0, 2^64), got '" + text + "'";
          },
          "UINT64"));
  cmd->add_option("--stop", args->stop, "Stop when the text holds STR, cut before it (repeatable)")->type_name("STR");
  cmd->add_flag("--ignore-eos", args->ignore_eos, "Generate --max-new-tokens tokens even after EOS");
  cmd->add_option("--eos-id", args->eos_ids, "EOS token id(s), replacing the model configs' (repeatable)")
      ->type_name("ID");
  cmd->add_flag("--json", args->json, "Print one JSON object at the end instead of streaming text");
  cmd->add_flag("--stats", args->stats, "Print steps and sessions planned (and their time) to stderr");
  cmd->add_flag("--profile", args->profile,
                "Time every kernel of the steps: a table per kind of step (decode, prompt) on stderr, and "
                "\"profile\" in the --json object");
  cmd->add_flag("--reference", args->model.reference, "Use the plain reference kernels (the ground truth)");
  cmd->add_flag("--no-fusion", args->model.no_fusion, "Run the unfused plan (every fusion pass off)");
  args->model.add_config_and_threads(*cmd, "YAML config file: one switch per optimization (docs/config.md)",
                                     "Threads (OpenMP, shared with oneDNN)");
  cmd->callback([args] { generate_command(*args); });
}

}  // namespace fusor::cli
