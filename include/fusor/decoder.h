// A decoder export run one step at a time with its keys and values kept between steps: the part
// of generation that touches the engine. The sampling loop (fusor/generate.h) sees only
// DecoderStep::run(ids) -> logits, so how the past is stored (today: the present tensors of the
// last step, fed back as past; later: a paged pool read in place) can change underneath it.
//
//   auto spec = fusor::DecoderSpec::load("models/llama-tiny");
//   fusor::DecoderStep step(spec);
//   std::span<const float> logits = step.run(prompt_ids);   // prefill: zero-length past
//   logits = step.run(std::vector<fusor::TokenId>{next});    // one token on the past
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "fusor/tokenizer.h"

namespace fusor {

// What the loop needs to know about a decoder export: its input and output names, the shape of
// its cache, its special ids and its context length.
struct DecoderSpec {
  std::string model_file;  // the .onnx file
  std::string folder;      // where the configs (and by default tokenizer.json) are

  // Names. The cache names are printf templates with one %d, the layer. Defaults are the
  // Hugging Face / Optimum layout; genai_config.json's model.decoder.inputs/outputs replace them.
  std::string input_ids = "input_ids";
  std::string attention_mask = "attention_mask";  // fed only when the model has it
  std::string position_ids = "position_ids";      // fed only when the model has it
  std::string past_key = "past_key_values.%d.key";
  std::string past_value = "past_key_values.%d.value";
  std::string logits = "logits";
  std::string present_key = "present.%d.key";
  std::string present_value = "present.%d.value";
  // A merged export's If condition ("use_cache_branch"): false on the prefill, true after;
  // empty when the model has no such input.
  std::string use_cache_branch;

  // The cache, from the past inputs' declared shapes [batch, kv_heads, past, head_dim].
  int layers = 0;
  int64_t kv_heads = 0;
  int64_t head_dim = 0;
  DType cache_dtype = DType::Float32;
  int64_t vocab_size = 0;  // the logits' last dimension, when declared (else 0)

  // From generation_config.json, else genai_config.json, else config.json; empty / nullopt
  // when none says.
  std::vector<TokenId> eos_ids;
  std::optional<TokenId> bos_id;
  std::optional<TokenId> pad_id;
  // Most tokens (prompt and generated) one sequence may hold: genai_config.json's
  // context_length, else config.json's max_position_embeddings or n_positions; 0 when unknown.
  int64_t context_length = 0;

  // `path` is a model.onnx file or a folder holding one. Reads the configs beside it and checks
  // the names against the model's inputs and outputs. A missing or unreadable model, malformed
  // JSON, or a model without the decoder's inputs is a one-line fusor::Error.
  static DecoderSpec load(const std::string& path);
  // The model file `path` names: itself, or in a folder genai_config.json's decoder filename,
  // else model.onnx. InvalidArgument when it is not a readable file.
  static std::string model_file_of(const std::string& path);
  // load() for an engine already loaded from `model_file`.
  static DecoderSpec describe(const Engine& engine, const std::string& model_file);
};

// One sequence's decoder state. Each run() feeds tokens after the past and keeps their keys and
// values; sessions are bound to concrete dims (fusor/engine.h), so one is built per
// (tokens, past) shape the first time it is needed and cached by that shape. Each session holds
// its own packed weights, so the cache keeps the `max_sessions` most recently used: one
// generation never reuses a shape (the past grows), a second one over the same lengths does.
// Not thread-safe: one DecoderStep per concurrent sequence.
class DecoderStep {
 public:
  // Loads spec.model_file. `options` are every session's (fusion switches, reference kernels).
  explicit DecoderStep(const DecoderSpec& spec, const SessionOptions& options = {}, size_t max_sessions = 4);
  DecoderStep(const Engine& engine, const DecoderSpec& spec, const SessionOptions& options = {},
              size_t max_sessions = 4);
  DecoderStep(DecoderStep&&) noexcept;
  DecoderStep& operator=(DecoderStep&&) noexcept;
  ~DecoderStep();

  // Runs `ids` (at least one) as the next positions after the past and appends their keys and
  // values to it. Returns the logits of the last position (vocab floats), valid until the next
  // run() or reset(). InvalidArgument when the past would outgrow the context length or an id
  // is negative; the past is unchanged then.
  std::span<const float> run(std::span<const TokenId> ids);
  // Tokens in the past (prompt and generated so far).
  int64_t past_length() const;
  // Forgets the past; the cached sessions stay.
  void reset();
  const DecoderSpec& spec() const;

  struct Stats {
    size_t sessions_built = 0;  // sessions planned so far (a shape again after eviction too)
    double plan_seconds = 0;    // spent building them
    size_t steps = 0;           // run() calls
  };
  Stats stats() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fusor
