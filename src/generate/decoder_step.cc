// DecoderStep: a one-sequence DecoderBatch (the paged KV cache) when it can, else the plain
// way: the past is the previous step's present tensors, fed back whole, and every
// (tokens, past) shape has its own session. A 64-token generation after a prompt of P tokens so
// builds 64 plain sessions (the prefill at past 0, then one per past P..P+62). The plain loop is
// the unfused reference the gate checks the cached one against.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include "fusor/decoder.h"
#include "fusor/error.h"
#include "generate/name_template.h"
#include "passes/cache_attention.h"

namespace fusor {

struct DecoderStep::Impl {
  Engine engine;
  DecoderSpec spec;
  SessionOptions options;
  DType ids_dtype = DType::Int64, mask_dtype = DType::Int64, positions_dtype = DType::Int64;
  bool has_mask = false, has_positions = false;
  std::vector<std::string> past_names, present_names;  // per layer: key, value
  struct Cached {
    Session session;
    size_t last_used;
  };
  std::map<std::tuple<int64_t, int64_t, std::vector<int64_t>>, Cached> sessions;  // by (tokens, past, cache lengths)
  size_t max_sessions;
  std::vector<Tensor> past;  // per layer: key, value, each [1, kv_heads, its cache length, head_dim]
  int64_t past_length = 0;   // the positions so far
  // What each past holds: past_length, or fewer where the export cuts a layer's cache to its
  // sliding window (transformers 5's present = Concat(past, new)[:, :, -kept:]); fed back as
  // ONNX Runtime feeds it.
  std::vector<int64_t> cache_lengths;
  std::vector<float> logits;
  Stats stats;
  std::optional<DecoderBatch> batch;  // the cached path, when it runs
  DecoderBatch::SequenceId sequence = 0;

  // The cached path unless fusion is off, the gate rolled it back, or the export does not match.
  void try_cache(const Engine& e) {
    if (!options.fusion) {
      stats.kv_cache_refusal = "fusion is off";
      return;
    }
    const auto& disabled = options.fusion->disabled;
    if (std::find(disabled.begin(), disabled.end(), kCacheAttentionItem) != disabled.end()) {
      stats.kv_cache_refusal = std::string("fusion.disabled lists ") + kCacheAttentionItem;
      return;
    }
    try {
      DecoderBatchOptions b;
      b.cache_tokens = spec.context_length;  // one sequence: the context is all it can hold
      b.max_sequences = 1;                   // and the LM head on its last token alone
      batch.emplace(e, spec, options, b);
      sequence = batch->add();
      stats.kv_cache = true;
    } catch (const Error& err) {
      if (err.kind() != ErrorKind::UnsupportedOp) throw;
      stats.kv_cache_refusal = err.what();
    }
  }

  Impl(Engine e, DecoderSpec s, SessionOptions o, size_t max)
      : engine(std::move(e)), spec(std::move(s)), options(std::move(o)), max_sessions(std::max<size_t>(max, 1)) {
    for (const TensorInfo& in : engine.inputs()) {
      if (in.name == spec.input_ids) ids_dtype = in.dtype;
      if (in.name == spec.attention_mask) has_mask = true, mask_dtype = in.dtype;
      if (in.name == spec.position_ids) has_positions = true, positions_dtype = in.dtype;
    }
    for (DType t : {mask_dtype, positions_dtype})
      if (t != DType::Int64 && t != DType::Int32)
        throw Error(spec.model_file + ": attention_mask and position_ids must be int64 or int32", ErrorKind::UnsupportedOp);
    for (int layer = 0; layer < spec.layers; ++layer) {
      past_names.push_back(format_name(spec.past_key, layer));
      past_names.push_back(format_name(spec.past_value, layer));
      present_names.push_back(format_name(spec.present_key, layer));
      present_names.push_back(format_name(spec.present_value, layer));
    }
    reset();
    try_cache(engine);
  }

  Dims cache_dims(int64_t length) const { return {1, spec.kv_heads, length, spec.head_dim}; }

  void reset() {
    past.assign(past_names.size(), Tensor(spec.cache_dtype, cache_dims(0)));
    past_length = 0;
    cache_lengths.assign(past_names.size(), 0);
  }

  Session& session_for(int64_t tokens) {
    auto key = std::make_tuple(tokens, past_length, cache_lengths);
    auto found = sessions.find(key);
    if (found != sessions.end()) {
      found->second.last_used = stats.steps;
      return found->second.session;
    }
    if (sessions.size() >= max_sessions)  // evict the least recently used
      sessions.erase(std::min_element(sessions.begin(), sessions.end(), [](const auto& a, const auto& b) {
        return a.second.last_used < b.second.last_used;
      }));
    auto start = std::chrono::steady_clock::now();
    std::map<std::string, Dims> dims = {{spec.input_ids, {1, tokens}}};
    if (has_mask) dims[spec.attention_mask] = {1, past_length + tokens};
    if (has_positions) dims[spec.position_ids] = {1, tokens};
    for (size_t i = 0; i < past_names.size(); ++i) dims[past_names[i]] = cache_dims(cache_lengths[i]);
    SessionOptions o = options;
    if (!spec.use_cache_branch.empty()) {
      // A merged export's If takes the no-past branch on the prompt. Frozen, the condition folds
      // and the session keeps one plan instead of planning per run.
      Tensor branch(DType::Bool, {1});
      branch.data<bool>()[0] = past_length > 0;
      dims[spec.use_cache_branch] = {1};
      o.frozen_inputs[spec.use_cache_branch] = branch;
    }
    Session session = engine.session(dims, o);
    stats.plan_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++stats.sessions_built;
    return sessions.emplace(key, Cached{std::move(session), stats.steps}).first->second.session;
  }

  static Tensor integers(DType dtype, Dims dims, int64_t first, int64_t step) {
    Tensor t(dtype, std::move(dims));
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (dtype == DType::Int64) t.data<int64_t>()[i] = first + i * step;
      else t.data<int32_t>()[i] = static_cast<int32_t>(first + i * step);
    }
    return t;
  }

  std::span<const float> run(std::span<const TokenId> ids) {
    if (batch) {
      const DecoderBatch::Feed feed{sequence, ids};
      std::span<const float> out = batch->step({&feed, 1})[0];
      ++stats.steps;
      return out;
    }
    if (ids.empty()) throw Error("a decoder step needs at least one token", ErrorKind::InvalidArgument);
    const auto n = static_cast<int64_t>(ids.size());
    if (spec.context_length > 0 && past_length + n > spec.context_length)
      throw Error("the sequence would hold " + std::to_string(past_length + n) + " tokens, more than the model's context length " +
                      std::to_string(spec.context_length),
                  ErrorKind::InvalidArgument);
    for (TokenId id : ids)
      if (id < 0 || (spec.vocab_size > 0 && id >= spec.vocab_size))
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(spec.vocab_size) + ")",
                    ErrorKind::InvalidArgument);

    std::map<std::string, Tensor> inputs;
    Tensor input_ids(ids_dtype, {1, n});
    for (int64_t i = 0; i < n; ++i) {
      if (ids_dtype == DType::Int64) input_ids.data<int64_t>()[i] = ids[static_cast<size_t>(i)];
      else input_ids.data<int32_t>()[i] = ids[static_cast<size_t>(i)];
    }
    inputs[spec.input_ids] = input_ids;
    if (has_mask) inputs[spec.attention_mask] = integers(mask_dtype, {1, past_length + n}, 1, 0);
    if (has_positions) inputs[spec.position_ids] = integers(positions_dtype, {1, n}, past_length, 1);
    for (size_t i = 0; i < past_names.size(); ++i) inputs[past_names[i]] = past[i];
    if (!spec.use_cache_branch.empty()) {
      Tensor branch(DType::Bool, {1});
      branch.data<bool>()[0] = past_length > 0;
      inputs[spec.use_cache_branch] = branch;
    }

    std::map<std::string, Tensor> outputs = session_for(n).run(inputs);
    ++stats.steps;

    const Tensor& all_logits = outputs.at(spec.logits);
    if (all_logits.rank() != 3 || all_logits.dim(0) != 1 || all_logits.dim(1) != n)
      throw Error("output '" + spec.logits + "' is " + dims_to_string(all_logits.dims()) + ", expected [1, " +
                  std::to_string(n) + ", vocab]");
    const int64_t vocab = all_logits.dim(2);
    std::vector<Tensor> present(present_names.size());
    for (size_t i = 0; i < present_names.size(); ++i) {
      present[i] = outputs.at(present_names[i]);
      const Dims& d = present[i].dims();
      const Dims want = cache_dims(cache_lengths[i] + n);
      const bool cut = d.size() == 4 && d[2] < want[2] && d == cache_dims(d[2]);  // keeps fewer
      if (d != want && !cut)
        throw Error("output '" + present_names[i] + "' is " + dims_to_string(d) + ", expected " + dims_to_string(want));
    }
    if (all_logits.dtype() == DType::Float32) {
      const float* last = all_logits.data<float>() + (n - 1) * vocab;
      logits.assign(last, last + vocab);
    } else {  // a float16 or bfloat16 model's logits, widened
      logits.resize(static_cast<size_t>(vocab));
      for (int64_t j = 0; j < vocab; ++j) logits[static_cast<size_t>(j)] = static_cast<float>(all_logits.scalar_as_double((n - 1) * vocab + j));
    }
    for (size_t i = 0; i < present.size(); ++i) cache_lengths[i] = present[i].dim(2);
    past = std::move(present);
    past_length += n;
    return logits;
  }
};

DecoderStep::DecoderStep(const DecoderSpec& spec, const SessionOptions& options, size_t max_sessions)
    : DecoderStep(Engine::load(spec.model_file), spec, options, max_sessions) {}
DecoderStep::DecoderStep(const Engine& engine, const DecoderSpec& spec, const SessionOptions& options,
                         size_t max_sessions)
    : impl_(std::make_unique<Impl>(engine, spec, options, max_sessions)) {}
DecoderStep::DecoderStep(DecoderStep&&) noexcept = default;
DecoderStep& DecoderStep::operator=(DecoderStep&&) noexcept = default;
DecoderStep::~DecoderStep() = default;

std::span<const float> DecoderStep::run(std::span<const TokenId> ids) { return impl_->run(ids); }
int64_t DecoderStep::past_length() const {
  return impl_->batch ? impl_->batch->length(impl_->sequence) : impl_->past_length;
}
void DecoderStep::reset() {
  if (impl_->batch) impl_->batch->reset(impl_->sequence);
  impl_->reset();
}
const DecoderSpec& DecoderStep::spec() const { return impl_->spec; }
DecoderStep::Stats DecoderStep::stats() const {
  Stats s = impl_->stats;
  if (impl_->batch) {
    s.sessions_built = impl_->batch->plans_built();
    s.plan_seconds = impl_->batch->plan_seconds();
    s.cache = impl_->batch->cache();
  }
  return s;
}
void DecoderStep::set_profiling(bool on) {
  if (impl_->batch) impl_->batch->set_profiling(on);
}
GenerationProfile DecoderStep::profile() const { return impl_->batch ? impl_->batch->profile() : GenerationProfile{}; }

}  // namespace fusor
