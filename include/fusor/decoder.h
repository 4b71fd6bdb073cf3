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
#include <atomic>
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

// The sampling a model's generation_config.json asks for (transformers' keys), used where a
// request or flag leaves a knob unset, as transformers' generate(), vLLM and OpenVINO GenAI read
// it. Unset: the file does not say (or there is none).
struct GenerationDefaults {
  std::optional<bool> do_sample;
  std::optional<double> temperature, top_p, repetition_penalty;
  std::optional<int64_t> top_k, max_new_tokens;
  // "do_sample true, temperature 0.6, top_p 0.9"; empty when nothing is set.
  std::string describe() const;
};

// What the loop needs to know about a decoder export: its input and output names, the shape of
// its cache, its special ids, its context length and its sampling defaults.
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
  GenerationDefaults generation_defaults;  // from generation_config.json

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

// Whether `engine` (loaded from `model_file`) is a decoder export fusor serves and tunes by
// generation: its inputs hold the past keys and values (`past_key_values.*`), or a
// genai_config.json beside it names them.
bool is_decoder_export(const Engine& engine, const std::string& model_file);

// Where the paged KV cache stands: the pool's size and what is in use.
struct KvCacheStats {
  size_t bytes = 0;            // the pool, keys and values of every layer
  size_t bytes_per_token = 0;  // layers x 2 x kv_heads x head_dim x 4
  int64_t block_size = 0;      // positions per block
  int64_t blocks = 0, blocks_used = 0;
};

struct DecoderBatchOptions {
  int64_t block_size = 16;       // positions per pool block
  int64_t cache_tokens = 0;      // the pool's capacity; 0: 8 x the context length (4096 if unknown)
  int64_t max_step_tokens = 128; // tokens one plan runs; longer steps run in chunks of this many
  // Most sequences one step feeds. The LM head and the layers' row-wise tail run on one row per
  // sequence (its last token), not on every token, so plans hold min(tokens, this rounded up
  // like a token count) rows of it; those of 64 tokens and more have a form with 4 rows too.
  int64_t max_sequences = 64;
};

// Where a DecoderBatch's steps spent their time, kernel by kernel (DecoderBatch::set_profiling):
// decode steps, where every sequence fed one token (a one-token prompt too), apart from prompt
// steps, where some fed a prompt or a chunk of one. A step longer than max_step_tokens counts
// once per chunk; a run stopped midway (abandoned, or failed) counts nothing.
struct KernelTime {
  std::string kernel;  // its name (kernel and ISA, as `fusor profile` shows it)
  std::string op;      // the op it runs; a fusion item's fused op
  int64_t calls = 0;
  double seconds = 0;
};
struct StepKindProfile {
  int64_t steps = 0;   // plan runs
  int64_t tokens = 0;  // real tokens they fed (not the plans' filler)
  double seconds = 0;  // their wall time: the kernels and the executor between them
  std::vector<KernelTime> kernels;  // most time first
};
struct GenerationProfile {
  StepKindProfile decode, prompt;
};

// Many sequences decoded together over a paged KV cache (issue #16). The model's
// Concat(past, new) -> attention is rewritten into CachedAttention over a pool of blocks
// (passes/cache_attention.h), so no shape depends on a past length: one plan per token count
// (a ladder of counts up to max_step_tokens) serves every past, and the tokens of several sequences
// at different positions run in one step, each attending to its own blocks.
//
//   fusor::DecoderBatch batch(engine, spec);
//   auto a = batch.add(), b = batch.add();
//   batch.step({{a, prompt_a}, {b, prompt_b}});       // prefills, together
//   auto logits = batch.step({{a, next_a}, {b, next_b}});  // one token each
//
// Throws an UnsupportedOp Error ("cannot cache attention: <why>") when the export's attention
// is not the pattern it proves (then DecoderStep runs the plain loop). Not thread-safe.
class DecoderBatch {
 public:
  using SequenceId = int64_t;
  struct Feed {
    SequenceId sequence;
    std::span<const TokenId> ids;  // at least one: the next positions after the sequence's past
  };

  DecoderBatch(const Engine& engine, const DecoderSpec& spec, const SessionOptions& options = {},
               const DecoderBatchOptions& batch_options = {});
  DecoderBatch(DecoderBatch&&) noexcept;
  DecoderBatch& operator=(DecoderBatch&&) noexcept;
  ~DecoderBatch();

  // A new empty sequence.
  SequenceId add();
  // Ends a sequence and returns its blocks to the pool at once. Unknown ids are ignored.
  void remove(SequenceId sequence);
  // Forgets a sequence's past (its blocks return to the pool); the id stays valid.
  void reset(SequenceId sequence);
  // Tokens the sequence holds.
  int64_t length(SequenceId sequence) const;

  // Runs every feed's tokens as one step (in chunks of max_step_tokens when more) and returns,
  // per feed, the logits of its last token (vocab floats), valid until the next step. A
  // sequence may appear once per step. InvalidArgument for an unknown sequence, an id outside the
  // vocabulary, or a sequence that would outgrow the context length; a Runtime Error when the
  // pool has no room (nothing has run then, and every sequence is unchanged).
  //
  // When `abandon` is set (by another thread) while the step runs, it stops between two kernels
  // and returns an empty span: every sequence is as it was before the step. The cache rows it
  // wrote lie past the sequences' lengths, and a later step writes them again before any
  // attention reads them.
  std::span<const std::span<const float>> step(std::span<const Feed> feeds, const std::atomic<bool>* abandon = nullptr);

  // Builds now every plan that steps of up to `tokens` tokens use (a server does this before it
  // takes requests, so that no request pays for a plan).
  void prepare(int64_t tokens);

  KvCacheStats cache() const;
  const DecoderSpec& spec() const;
  // Plans built so far (one per token count and logit-row count used) and the seconds they took.
  size_t plans_built() const;
  double plan_seconds() const;
  // Bytes of the one arena that every plan runs in, one step at a time: the largest plan's.
  size_t arena_bytes() const;

  // Times every kernel of the steps from now on (on: from zero again; off: stops timing, the
  // profile stays). Off by default: the executor then takes no clock readings per kernel.
  void set_profiling(bool on);
  GenerationProfile profile() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One sequence's decoder state. Each run() feeds tokens after the past and keeps their keys and
// values. With fusion on (and the gate's kv_cache item not rolled back) a one-sequence
// DecoderBatch runs it: the paged cache, one plan per token count. Otherwise, or when the export
// does not match the cached pattern, the plain loop runs: the past is the last step's present
// tensors, fed back whole, and since sessions are bound to concrete dims one is built per
// (tokens, past) shape and cached by that shape, keeping the `max_sessions` most recently used
// (each holds its own plan and arena; their packed weights are shared).
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
    // The paged KV cache (DecoderBatch) runs the steps; otherwise the plain loop does, and
    // kv_cache_refusal says why (fusion off, the gate rolled it back, or the pattern's refusal).
    bool kv_cache = false;
    std::string kv_cache_refusal;
    KvCacheStats cache;
  };
  Stats stats() const;

  // DecoderBatch's profiling of the steps from now on, when the paged KV cache runs them; the
  // plain loop's steps are not profiled (its profile stays empty).
  void set_profiling(bool on);
  GenerationProfile profile() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fusor
