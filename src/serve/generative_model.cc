#include "serve/generative_model.h"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "fusor/error.h"
#include "kernels/cpu/thread_pool.h"
#include "serve/generation_scheduler.h"
#include "serve/generation_target.h"
#include "serve/generation_stats.h"

namespace fusor::serve {
namespace {

DecoderBatchOptions batch_options(const ServeConfig& config) {
  DecoderBatchOptions o;
  o.max_step_tokens = config.step_tokens;
  o.cache_tokens = config.kv_cache_tokens;
  o.max_sequences = config.max_sequences;
  return o;
}

}  // namespace

GenerativeModel::GenerativeModel(std::string name, Engine engine, const std::string& model_file,
                                 const ServeConfig& config, const SessionOptions& options, int threads, bool announce)
    : name_(std::move(name)), config_(config), spec_(DecoderSpec::describe(engine, model_file)),
      created_(std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count()),
      stats_(std::make_unique<GenerationStats>(class_names(config))) {
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(spec_.folder) / "tokenizer.json", ec))
    tokenizer_ = std::make_unique<Tokenizer>(Tokenizer::load(spec_.folder));
  chat_ = std::make_unique<ChatTemplate>(ChatTemplate::for_model(spec_.folder));
  // The paged KV cache is what makes continuous batching possible: without it (fusion off, the
  // gate rolled kv_cache back, or an export whose attention it cannot prove) this throws.
  DecoderBatch batch(engine, spec_, options, batch_options(config));
  const auto start = std::chrono::steady_clock::now();
  cpu::set_thread_width(threads);
  batch.prepare(config.step_tokens);
  const KvCacheStats cache = batch.cache();
  if (announce)
    std::fprintf(stderr,
                 "fusor serve: model %s: generative (continuous batching), %zu plan(s) for steps of up to %lld tokens "
                 "built in %.1f s; KV cache %lld tokens (%.1f MiB), up to %lld sequences\n",
                 name_.c_str(), batch.plans_built(), static_cast<long long>(config.step_tokens),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
                 static_cast<long long>(cache.blocks * cache.block_size), static_cast<double>(cache.bytes) / (1 << 20),
                 static_cast<long long>(config.max_sequences));
  if (announce && chat_->is_plain())
    std::fprintf(stderr, "fusor serve: model %s: no chat_template in tokenizer_config.json; chat uses the plain template\n",
                 name_.c_str());
  // vLLM says the same: a request's defaults are not OpenAI's when the model's config sets them.
  if (const std::string defaults = spec_.generation_defaults.describe(); announce && !defaults.empty())
    std::fprintf(stderr, "fusor serve: model %s: sampling defaults from generation_config.json: %s\n", name_.c_str(),
                 defaults.c_str());
  scheduler_ = std::make_unique<GenerationScheduler>(std::move(batch), config_, tokenizer_.get(), *stats_,
                                                     [threads] { cpu::become_compute_thread(threads); });
}

GenerativeModel::~GenerativeModel() { drain(); }

uint64_t GenerativeModel::submit(GenerationRequest request, GenerationEvents events) {
  if (request.options.eos_ids.empty() && !request.options.ignore_eos) request.options.eos_ids = spec_.eos_ids;
  return scheduler_->submit(std::move(request), std::move(events));
}

void GenerativeModel::refused(const std::string& cls, Code code) {
  stats_->failed(config_.classes.count(cls) ? cls : config_.default_class, code, false, false);
}

std::shared_ptr<StreamHub> GenerativeModel::stream_hub() const { return scheduler_->stream_hub(); }

void GenerativeModel::cancel(uint64_t id) { scheduler_->cancel(id); }

void GenerativeModel::drain() {
  if (scheduler_) scheduler_->drain();
}

void GenerativeModel::stream_opened() {
  std::lock_guard lock(streams_mu_);
  ++open_streams_;
}

void GenerativeModel::stream_closed() {
  std::lock_guard lock(streams_mu_);
  if (--open_streams_ == 0) streams_cv_.notify_all();
}

void GenerativeModel::wait_streams_closed(std::chrono::milliseconds limit) {
  std::unique_lock lock(streams_mu_);
  streams_cv_.wait_for(lock, limit, [this] { return open_streams_ == 0; });
}

GenerativeModel::Load GenerativeModel::load() const { return scheduler_->load(); }

// Here rather than in generation_target.cc, so that the request readers build without the
// engine (tests/fuzz/fuzz_openai_request.cc).
GenerationTarget target_of(const GenerativeModel& model) {
  GenerationTarget t;
  t.name = model.name();
  t.tokenizer = model.tokenizer();
  t.chat_template = &model.chat_template();
  t.context_length = model.spec().context_length;
  t.vocab_size = model.spec().vocab_size;
  t.defaults = model.spec().generation_defaults;
  return t;
}

}  // namespace fusor::serve
