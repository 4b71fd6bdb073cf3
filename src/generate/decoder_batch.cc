// DecoderBatch: the decoder graph rewritten for the paged KV cache, one plan per rung of a
// ladder of token counts (capacity_for) and of logit rows (rows_for), and the packing of each
// step's tokens into that plan's [1, T] inputs. Tokens past the real ones are filler at position
// -1: the GEMMs skip their rows (set_live_tokens), CachedAttention neither stores nor reads for
// them, and their logits are never looked at.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <optional>

#include "engine/internals.h"
#include "fusor/decoder.h"
#include "fusor/error.h"
#include "generate/kv_pool.h"
#include "generate/name_template.h"
#include "generate/step_profile.h"
#include "ir/bind.h"
#include "ir/graph_edit.h"
#include "kernels/ref/reference.h"
#include "passes/cache_attention.h"
#include "passes/logit_rows.h"
#include "plan/inline_branches.h"

namespace fusor {

namespace {

// The name of graph output `name` in float32: itself, or a Cast of it appended where the model
// gives float16 or bfloat16 logits (the sampler reads float32).
std::string float32_output(Graph& g, const std::string& name) {
  const int id = g.find_value(name);
  const auto at = std::find(g.outputs.begin(), g.outputs.end(), id);
  if (id < 0 || at == g.outputs.end()) return name;
  const DType t = g.values[static_cast<size_t>(id)].dtype;
  if (t != DType::Float16 && t != DType::BFloat16) return name;
  const int out = append_cast(g, id, DType::Float32, name + "/float32");
  *at = out;
  g.reorder_nodes();
  return g.values[static_cast<size_t>(out)].name;
}

// One plan bound to `capacity` tokens, with its input tensors preallocated.
struct TokenPlan {
  std::optional<Session> session;
  std::vector<Tensor> inputs;  // in the plan graph's input order; shared inputs undefined
  std::vector<Tensor> outputs;  // views of the last run's outputs in its arena (Executor::run_in_place)
  Tensor* ids = nullptr;
  int64_t* positions = nullptr;
  int64_t* table = nullptr;
  int64_t* rows = nullptr;  // the rows the tail runs on (passes/logit_rows.h), else null
  int64_t row_count = 0;    // how many
  StepTimes times[2];       // by StepKind, while profiling
};

struct Sequence {
  std::vector<int64_t> blocks;
  int64_t length = 0;
};

}  // namespace

struct DecoderBatch::Impl {
  DecoderSpec spec;
  SessionOptions options;
  DecoderBatchOptions batch;
  std::shared_ptr<const Graph> graph;  // the cached decoder
  CachedDecoder cached;
  DType ids_dtype = DType::Int64;
  int64_t table_width = 0;  // blocks per sequence: the context length's
  bool gathered_rows = false;  // the tail from the last attention up runs on kLogitRows' rows (passes/logit_rows.h)
  int64_t row_cap = 1;         // max_sequences rounded up as capacity_for rounds
  std::optional<KvPool> pool;
  std::map<std::pair<int64_t, int64_t>, TokenPlan> plans;  // by capacity and logit rows (rows_for)
  // The one arena every plan runs in: steps run one at a time, and a step copies what it keeps
  // (its logits rows) out before the next, so the plans need the largest one's bytes, not the sum.
  std::shared_ptr<SharedArena> arena = std::make_shared<SharedArena>();
  std::map<SequenceId, Sequence> sequences;
  SequenceId next_id = 0;
  std::vector<float> logits;                     // per feed, vocab floats
  std::vector<std::span<const float>> results;   // per feed
  std::vector<int64_t> ends;                     // per feed: the length after this step
  std::vector<std::pair<size_t, int64_t>> last_rows;  // (feed, row) of the feeds that end in a chunk
  size_t plans_built = 0;
  double plan_seconds = 0;
  int64_t vocab = 0;
  std::string logits_output;  // spec.logits, or its Cast to float32
  bool profiling = false;
  StepKind step_kind = StepKind::Prompt;  // of the step running

  Impl(const Engine& engine, DecoderSpec s, SessionOptions o, DecoderBatchOptions b)
      : spec(std::move(s)), options(std::move(o)), batch(b) {
    if (batch.block_size < 1 || batch.max_step_tokens < 1 || batch.cache_tokens < 0 || batch.max_sequences < 1)
      throw Error("block_size, max_step_tokens and max_sequences must be positive, cache_tokens not negative",
                  ErrorKind::InvalidArgument);
    row_cap = capacity_for(batch.max_sequences);
    DecoderGraphNames names{spec.input_ids, spec.attention_mask, spec.position_ids, {}, {}, {}, {}, spec.head_dim};
    for (int layer = 0; layer < spec.layers; ++layer) {
      names.past_keys.push_back(format_name(spec.past_key, layer));
      names.past_values.push_back(format_name(spec.past_value, layer));
      names.present_keys.push_back(format_name(spec.present_key, layer));
      names.present_values.push_back(format_name(spec.present_value, layer));
    }
    Graph g = spec.use_cache_branch.empty() ? graph_of(engine) : with_past_branch(graph_of(engine));
    cached = prepare_cached_decoder(g, names, ref::evaluate, spec.context_length);
    const int64_t context = spec.context_length > 0 ? spec.context_length : 4096;
    table_width = (context + batch.block_size - 1) / batch.block_size;
    const int64_t tokens = batch.cache_tokens > 0 ? batch.cache_tokens : 8 * context;
    pool.emplace(spec.layers, cached.kv_heads, cached.head_dim, batch.block_size,
                 (tokens + batch.block_size - 1) / batch.block_size);
    const TokenProbe probes[2] = {probe(g, 3), probe(g, 5)};
    gathered_rows = gather_logit_rows(g, spec.logits, probes);
    logits_output = float32_output(g, spec.logits);
    for (int id : g.inputs)
      if (g.values[static_cast<size_t>(id)].name == spec.input_ids) ids_dtype = g.values[static_cast<size_t>(id)].dtype;
    graph = std::make_shared<const Graph>(std::move(g));
  }

  // The inputs' dims of a plan of `capacity` tokens and `rows` logit rows.
  std::map<std::string, Dims> input_dims(int64_t capacity, int64_t rows) const {
    std::map<std::string, Dims> dims = {{spec.input_ids, {1, capacity}}, {spec.position_ids, {1, capacity}},
                                        {cached.block_table, {1, capacity, table_width}}};
    if (gathered_rows) dims[kLogitRows] = {rows};
    for (int layer = 0; layer < spec.layers; ++layer) {
      dims[cached.key_caches[static_cast<size_t>(layer)]] = pool->keys(layer).dims();
      dims[cached.value_caches[static_cast<size_t>(layer)]] = pool->values(layer).dims();
    }
    return dims;
  }

  // The cached decoder `g` bound at `tokens` tokens: what tells gather_logit_rows the token axis.
  TokenProbe probe(const Graph& g, int64_t tokens) const {
    std::vector<TensorType> types(g.inputs.size());
    std::vector<Tensor> frozen(g.inputs.size());
    bind_inputs(g, input_dims(tokens, 0), {}, types, frozen);
    return {tokens, bind_graph(g, types, frozen, ref::evaluate).types};
  }

  // A merged export's graph with its If on use_cache_branch replaced by the with-past branch,
  // which the cache serves at every step (a prompt is a step after an empty past).
  Graph with_past_branch(const Graph& merged) const {
    std::vector<TensorType> types;
    std::vector<Tensor> frozen;
    for (int id : merged.inputs) {
      const Value& v = merged.values[static_cast<size_t>(id)];
      TensorType t{v.dtype, {}};
      if (v.shape)
        for (const Dim& d : *v.shape) t.dims.push_back(d.is_static() ? d.value : 1);
      Tensor f;
      if (v.name == spec.use_cache_branch) {
        if (v.dtype != DType::Bool || numel_of(t.dims) != 1)
          throw Error("cannot cache attention: '" + v.name + "' is not one bool", ErrorKind::UnsupportedOp);
        f = Tensor(DType::Bool, t.dims);
        f.data<bool>()[0] = true;
      }
      types.push_back(std::move(t));
      frozen.push_back(std::move(f));
    }
    Graph g = *inline_known_branches(std::make_shared<const Graph>(merged), types, frozen);
    const int branch = g.find_value(spec.use_cache_branch);
    for (const Node& n : g.nodes)
      if (std::find(n.inputs.begin(), n.inputs.end(), branch) != n.inputs.end())
        throw Error("cannot cache attention: '" + spec.use_cache_branch + "' is still read by " + n.op_type + " '" +
                        n.name + "' after its branch is taken",
                    ErrorKind::UnsupportedOp);
    std::erase(g.inputs, branch);
    return g;
  }

  TokenPlan& plan_for(int64_t capacity, int64_t rows) {
    auto found = plans.find({capacity, rows});
    if (found != plans.end()) return found->second;
    const auto start = std::chrono::steady_clock::now();
    const std::map<std::string, Dims> dims = input_dims(capacity, rows);
    PlanOptions po = plan_options(options, {});
    po.token_rows = capacity;
    for (int layer = 0; layer < spec.layers; ++layer) {
      po.shared_inputs[cached.key_caches[static_cast<size_t>(layer)]] = pool->keys(layer);
      po.shared_inputs[cached.value_caches[static_cast<size_t>(layer)]] = pool->values(layer);
    }
    TokenPlan p;
    p.session = EngineInternals::session(std::make_unique<Plan>(build_plan(graph, dims, po)), options);
    share_arena(*p.session, arena);
    const Plan& plan = plan_of(*p.session);
    const Graph& pg = *plan.graph;
    for (int id : pg.inputs) {
      if (plan.is_shared(id)) {
        p.inputs.emplace_back();
        continue;
      }
      const TensorType& t = plan.types[static_cast<size_t>(id)];
      p.inputs.emplace_back(t.dtype, t.dims);
      const std::string& name = pg.values[static_cast<size_t>(id)].name;
      if (name == spec.position_ids) p.positions = p.inputs.back().data<int64_t>();
      else if (name == cached.block_table) p.table = p.inputs.back().data<int64_t>();
      else if (name == kLogitRows) p.rows = p.inputs.back().data<int64_t>();
    }
    // Once p.inputs no longer grows (its buffer moves with p into the map, so the pointer holds).
    for (size_t i = 0; i < pg.inputs.size(); ++i)
      if (pg.values[static_cast<size_t>(pg.inputs[i])].name == spec.input_ids) p.ids = &p.inputs[i];
    if (pg.outputs.empty() || pg.values[static_cast<size_t>(pg.outputs[0])].name != logits_output)
      throw Error("the cached decoder's first output is not '" + logits_output + "'");
    const TensorType& logits_type = plan.types[static_cast<size_t>(pg.outputs[0])];
    const Dims& ld = logits_type.dims;
    if (ld.size() != 3 || ld[1] != (gathered_rows ? rows : capacity) || logits_type.dtype != DType::Float32)
      throw Error("output '" + spec.logits + "' is " + dims_to_string(ld) + ", expected [1, tokens, vocab] float32");
    vocab = ld[2];
    plan_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++plans_built;
    p.row_count = rows;
    return plans.emplace(std::pair{capacity, rows}, std::move(p)).first->second;
  }

  Sequence& sequence(SequenceId id) {
    auto it = sequences.find(id);
    if (it == sequences.end()) throw Error("no sequence " + std::to_string(id), ErrorKind::InvalidArgument);
    return it->second;
  }

  // Checks every feed and reserves the blocks they need; on any failure nothing has changed.
  void admit(std::span<const Feed> feeds) {
    ends.assign(feeds.size(), 0);
    if (static_cast<int64_t>(feeds.size()) > batch.max_sequences)
      throw Error("a step of " + std::to_string(feeds.size()) + " sequences, more than max_sequences (" +
                      std::to_string(batch.max_sequences) + ")",
                  ErrorKind::InvalidArgument);
    for (size_t i = 0; i < feeds.size(); ++i) {
      const Feed& f = feeds[i];
      Sequence& s = sequence(f.sequence);
      for (size_t j = 0; j < i; ++j)
        if (feeds[j].sequence == f.sequence)
          throw Error("sequence " + std::to_string(f.sequence) + " is fed twice in one step", ErrorKind::InvalidArgument);
      if (f.ids.empty()) throw Error("a decoder step needs at least one token per sequence", ErrorKind::InvalidArgument);
      const int64_t end = s.length + static_cast<int64_t>(f.ids.size());
      if (spec.context_length > 0 && end > spec.context_length)
        throw Error("the sequence would hold " + std::to_string(end) + " tokens, more than the model's context length " +
                        std::to_string(spec.context_length),
                    ErrorKind::InvalidArgument);
      if (end > table_width * batch.block_size)
        throw Error("the sequence would hold " + std::to_string(end) + " tokens, more than its block table's " +
                        std::to_string(table_width * batch.block_size),
                    ErrorKind::InvalidArgument);
      for (TokenId id : f.ids)
        if (id < 0 || (spec.vocab_size > 0 && id >= spec.vocab_size))
          throw Error("token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(spec.vocab_size) + ")",
                      ErrorKind::InvalidArgument);
      ends[i] = end;
    }
    int64_t need = 0;
    for (size_t i = 0; i < feeds.size(); ++i) {
      const Sequence& s = sequences.at(feeds[i].sequence);
      need += (ends[i] + batch.block_size - 1) / batch.block_size - static_cast<int64_t>(s.blocks.size());
    }
    if (need > pool->free_blocks())
      throw Error("the KV cache is full: this step needs " + std::to_string(need) + " more blocks, " +
                  std::to_string(pool->free_blocks()) + " are free");
    for (size_t i = 0; i < feeds.size(); ++i) pool->reserve(sequences.at(feeds[i].sequence).blocks, ends[i]);
  }

  // The logit rows of the plans of `capacity` tokens: the rows that the decoder's tail runs on
  // (passes/logit_rows.h), at least as many as the feeds that end in a chunk. A prompt-sized plan
  // has smaller forms too: a lone 128-token prompt reads one row, and its plan of row_cap rows
  // (32 in fusor serve) ran the last layer's MLP 32 times. Each form costs a plan (~2 MB), so a
  // 16-row form exists only where the largest has 64 rows or more (`fusor generate --batch` of
  // 64 sequences: 14% off its prompt steps, whose chunk sits beside ~15 decodes); beside
  // serve's 32 it saved ~4% of such a step, inside the noise end to end, for 16 MB.
  struct RowForm {
    int64_t rows, from_most;  // exists when most_rows is at least from_most (and above rows)
  };
  static constexpr RowForm kFewerRows[] = {{4, 5}, {16, 64}};
  static constexpr int64_t kFewerRowsFrom = 64;  // tokens: prompt-sized plans only
  int64_t most_rows(int64_t capacity) const { return gathered_rows ? std::min(capacity, row_cap) : 0; }
  // The fewest rows a plan of `capacity` tokens has for `needed` of them (no allocation: every
  // step asks).
  int64_t rows_for(int64_t capacity, int64_t needed) const {
    const int64_t most = most_rows(capacity);
    if (capacity >= kFewerRowsFrom)
      for (RowForm f : kFewerRows)
        if (most >= f.from_most && f.rows < most && needed <= f.rows) return f.rows;
    return most;
  }
  // Every form of the plans of `capacity` tokens, fewest rows first; the last is most_rows.
  std::vector<int64_t> row_forms(int64_t capacity) const {
    std::vector<int64_t> forms;
    for (RowForm f : kFewerRows)
      if (rows_for(capacity, f.rows) == f.rows) forms.push_back(f.rows);
    forms.push_back(most_rows(capacity));
    return forms;
  }

  // The plan that runs `count` tokens: the next power of two up to 16, then the next multiple of
  // a quarter of the power of two below (24, 32, 40, ..., 64, 80, ..., 128, 160, ...). Filler
  // tokens cost full GEMM work: with powers of two alone, a step of 15 decodes and a 128-token
  // prompt ran 256 tokens. Now at most a fifth of a step is filler (a third below 32 tokens),
  // and 19 capacities serve steps of up to 256.
  static int64_t capacity_for(int64_t count) {
    int64_t below = 1;  // the largest power of two under count
    while (below * 2 < count) below *= 2;
    if (count <= 16) return count <= 1 ? 1 : below * 2;
    const int64_t quantum = std::max<int64_t>(below / 4, 8);
    return (count + quantum - 1) / quantum * quantum;
  }

  // Runs tokens [from, from + count) of the step's concatenated feeds as one plan; false when
  // `abandon` stopped it.
  bool run_chunk(std::span<const Feed> feeds, int64_t from, int64_t count, const std::atomic<bool>* abandon) {
    const int64_t capacity = capacity_for(count);
    int64_t ending = 0, at = 0;  // the feeds whose last token is in this chunk
    for (const Feed& f : feeds) {
      at += static_cast<int64_t>(f.ids.size());
      ending += at - 1 >= from && at - 1 < from + count;
    }
    TokenPlan& p = plan_for(capacity, rows_for(capacity, ending));
    int64_t t = 0;
    at = 0;
    last_rows.clear();
    for (size_t i = 0; i < feeds.size(); ++i) {
      const Sequence& s = sequences.at(feeds[i].sequence);
      const auto n = static_cast<int64_t>(feeds[i].ids.size());
      const int64_t lo = std::max(from, at), hi = std::min(from + count, at + n);
      for (int64_t k = lo; k < hi; ++k, ++t) {
        const int64_t j = k - at, position = ends[i] - n + j;
        const TokenId id = feeds[i].ids[static_cast<size_t>(j)];
        if (ids_dtype == DType::Int64) p.ids->data<int64_t>()[t] = id;
        else p.ids->data<int32_t>()[t] = static_cast<int32_t>(id);
        p.positions[t] = position;
        int64_t* row = p.table + t * table_width;
        std::copy(s.blocks.begin(), s.blocks.end(), row);
        std::fill(row + s.blocks.size(), row + table_width, int64_t{-1});
        if (j == n - 1) last_rows.emplace_back(i, t);
      }
      at += n;
    }
    for (; t < capacity; ++t) {  // filler
      if (ids_dtype == DType::Int64) p.ids->data<int64_t>()[t] = 0;
      else p.ids->data<int32_t>()[t] = 0;
      p.positions[t] = -1;
      std::fill(p.table + t * table_width, p.table + (t + 1) * table_width, int64_t{-1});
    }
    if (p.rows) {  // the decoder's tail runs on these rows only (passes/logit_rows.h); the rest repeat row 0
      for (size_t r = 0; r < last_rows.size(); ++r) p.rows[r] = last_rows[r].second;
      std::fill(p.rows + last_rows.size(), p.rows + p.row_count, int64_t{0});
      for (size_t r = 0; r < last_rows.size(); ++r) last_rows[r].second = static_cast<int64_t>(r);
    }
    // The GEMMs skip the filler's rows. The gathered rows count as tokens too when there are T of
    // them: the real ones come first and number at most `count`.
    set_live_tokens(plan_of(*p.session), count);
    Executor& executor = executor_of(*p.session);
    executor.set_abandon_flag(abandon);
    if (profiling) return run_profiled(p, count);
    if (!executor.run_in_place(p.inputs, p.outputs)) return false;
    copy_logits(p);
    return true;
  }

  // run_chunk's run with its kernels timed into the plan's StepTimes of this step's kind.
  bool run_profiled(TokenPlan& p, int64_t count) {
    StepTimes& t = p.times[static_cast<int>(step_kind)];
    if (t.seconds.empty()) t = step_times_for(plan_of(*p.session));
    Executor& executor = executor_of(*p.session);
    executor.set_step_hook([&t](size_t step, const Step&, double seconds) { t.pending[step] = seconds; });
    struct Unhook {  // also when the run throws
      Executor& e;
      ~Unhook() { e.set_step_hook(nullptr); }
    } unhook{executor};
    const auto start = std::chrono::steady_clock::now();
    if (!executor.run_in_place(p.inputs, p.outputs)) return false;
    t.finish_run(count, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    copy_logits(p);
    return true;
  }

  // The logits of the feeds that end in the chunk just run, out of its arena.
  void copy_logits(const TokenPlan& p) {
    const float* out = p.outputs[0].data<float>();
    for (auto [feed, row] : last_rows)
      std::copy(out + row * vocab, out + (row + 1) * vocab, logits.begin() + static_cast<int64_t>(feed) * vocab);
  }

  std::span<const std::span<const float>> step(std::span<const Feed> feeds, const std::atomic<bool>* abandon) {
    admit(feeds);
    if (profiling)
      step_kind = std::all_of(feeds.begin(), feeds.end(), [](const Feed& f) { return f.ids.size() == 1; })
                      ? StepKind::Decode
                      : StepKind::Prompt;
    int64_t total = 0;
    for (const Feed& f : feeds) total += static_cast<int64_t>(f.ids.size());
    if (vocab == 0) {  // learns the vocabulary
      const int64_t capacity = capacity_for(std::min(total, batch.max_step_tokens));
      plan_for(capacity, most_rows(capacity));
    }
    logits.resize(feeds.size() * static_cast<size_t>(vocab));
    try {
      for (int64_t from = 0; from < total; from += batch.max_step_tokens)
        if (!run_chunk(feeds, from, std::min(batch.max_step_tokens, total - from), abandon)) {
          // Nothing committed: the blocks reserved for this step go back, lengths stay.
          for (const Feed& f : feeds) {
            Sequence& s = sequences.at(f.sequence);
            pool->shrink(s.blocks, s.length);
          }
          return {};
        }
    } catch (...) {
      // A failed run leaves the pool's rows for this step undefined: the fed sequences restart.
      for (const Feed& f : feeds) reset(f.sequence);
      throw;
    }
    results.clear();
    for (size_t i = 0; i < feeds.size(); ++i) {
      sequences.at(feeds[i].sequence).length = ends[i];
      results.emplace_back(logits.data() + i * static_cast<size_t>(vocab), static_cast<size_t>(vocab));
    }
    return results;
  }

  void reset(SequenceId id) {
    auto it = sequences.find(id);
    if (it == sequences.end()) return;
    pool->release(it->second.blocks);
    it->second.length = 0;
  }
};

DecoderBatch::DecoderBatch(const Engine& engine, const DecoderSpec& spec, const SessionOptions& options,
                           const DecoderBatchOptions& batch_options)
    : impl_(std::make_unique<Impl>(engine, spec, options, batch_options)) {}
DecoderBatch::DecoderBatch(DecoderBatch&&) noexcept = default;
DecoderBatch& DecoderBatch::operator=(DecoderBatch&&) noexcept = default;
DecoderBatch::~DecoderBatch() = default;

DecoderBatch::SequenceId DecoderBatch::add() {
  const SequenceId id = impl_->next_id++;
  impl_->sequences[id].blocks.reserve(static_cast<size_t>(impl_->table_width));
  return id;
}

void DecoderBatch::remove(SequenceId sequence) {
  impl_->reset(sequence);
  impl_->sequences.erase(sequence);
}

void DecoderBatch::reset(SequenceId sequence) { impl_->reset(sequence); }
int64_t DecoderBatch::length(SequenceId sequence) const {
  auto it = impl_->sequences.find(sequence);
  if (it == impl_->sequences.end()) throw Error("no sequence " + std::to_string(sequence), ErrorKind::InvalidArgument);
  return it->second.length;
}

std::span<const std::span<const float>> DecoderBatch::step(std::span<const Feed> feeds, const std::atomic<bool>* abandon) {
  return impl_->step(feeds, abandon);
}

KvCacheStats DecoderBatch::cache() const {
  const KvPool& p = *impl_->pool;
  return {p.bytes(), p.bytes_per_token(), p.block_size(), p.blocks(), p.blocks() - p.free_blocks()};
}
const DecoderSpec& DecoderBatch::spec() const { return impl_->spec; }
void DecoderBatch::prepare(int64_t tokens) {
  const int64_t last = Impl::capacity_for(std::clamp<int64_t>(tokens, 1, impl_->batch.max_step_tokens));
  for (int64_t capacity = 1; capacity <= last; capacity = Impl::capacity_for(capacity + 1)) {
    for (int64_t rows : impl_->row_forms(capacity)) impl_->plan_for(capacity, rows);
  }
}

size_t DecoderBatch::plans_built() const { return impl_->plans_built; }
size_t DecoderBatch::arena_bytes() const { return impl_->arena->size(); }
double DecoderBatch::plan_seconds() const { return impl_->plan_seconds; }

void DecoderBatch::set_profiling(bool on) {
  impl_->profiling = on;
  if (!on) return;
  for (auto& [key, p] : impl_->plans)
    for (StepTimes& t : p.times) t = {};
}

GenerationProfile DecoderBatch::profile() const {
  GenerationProfile out;
  for (const auto& [key, p] : impl_->plans) {
    const Plan& plan = plan_of(*p.session);
    add_to_profile(plan, p.times[static_cast<int>(StepKind::Decode)], out.decode);
    add_to_profile(plan, p.times[static_cast<int>(StepKind::Prompt)], out.prompt);
  }
  sort_by_time(out.decode);
  sort_by_time(out.prompt);
  return out;
}

}  // namespace fusor
