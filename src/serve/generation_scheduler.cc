#include "serve/generation_scheduler.h"

#include <algorithm>
#include <functional>
#include <map>

#include "fusor/error.h"
#include "kernels/cpu/thread_pool.h"
#include "serve/step_composition.h"

namespace fusor::serve {
namespace {

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

int64_t blocks_for(int64_t tokens, int64_t block_size) { return (tokens + block_size - 1) / block_size; }

}  // namespace

GenerationScheduler::GenerationScheduler(DecoderBatch batch, const ServeConfig& config, const Tokenizer* tokenizer,
                                         GenerationStats& stats, std::function<void()> on_thread_start)
    : batch_(std::move(batch)), config_(config), tokenizer_(tokenizer), stats_(stats),
      on_thread_start_(std::move(on_thread_start)), context_(batch_.spec().context_length),
      vocab_(batch_.spec().vocab_size), block_size_(batch_.cache().block_size) {
  std::vector<std::pair<std::string, TrafficClass>> classes(config_.classes.begin(), config_.classes.end());
  std::stable_sort(classes.begin(), classes.end(), [](const auto& a, const auto& b) { return a.second.priority < b.second.priority; });
  for (auto& [name, cls] : classes) {
    ClassQueue& q = queues_.emplace_back();
    q.name = name;
    q.cls = cls;
  }
  cache_ = batch_.cache();
  cpu::release_openmp_team();  // this thread built the plans; the steps run on the scheduler's
  thread_ = std::thread([this] { loop(); });
}

GenerationScheduler::~GenerationScheduler() { drain(); }

GenerationScheduler::ClassQueue* GenerationScheduler::queue_of(const std::string& name) {
  const std::string& n = name.empty() ? config_.default_class : name;
  for (ClassQueue& q : queues_)
    if (q.name == n) return &q;
  return nullptr;
}

uint64_t GenerationScheduler::submit(GenerationRequest request, GenerationEvents events) {
  auto reject = [&](Code code, const std::string& message) {
    GenerationOutcome out;
    out.status = {code, message};
    out.prompt_tokens = static_cast<int64_t>(request.prompt.size());
    if (events.on_done) events.on_done(out);
    return uint64_t{0};
  };
  auto s = std::make_unique<Sequence>();
  s->arrived = Clock::now();
  {
    std::lock_guard lock(mu_);
    s->cls = queue_of(request.cls);
  }
  if (!s->cls) {  // counted under the default class, as the encoders' batcher counts it
    stats_.failed(config_.default_class, Code::BadRequest, false, false);
    return reject(Code::BadRequest, "unknown traffic class '" + request.cls + "'");
  }
  const std::string& cls = s->cls->name;
  const int64_t length = static_cast<int64_t>(request.prompt.size());
  if (context_room(length, context_) == 0) {
    stats_.failed(cls, Code::BadRequest, false, false);
    return reject(Code::BadRequest, "the prompt has " + std::to_string(length) +
                                        " tokens; this model's context length is " + std::to_string(context_) +
                                        ", which must also hold at least one generated token");
  }
  if (blocks_for(length + 1, block_size_) > cache_.blocks) {
    stats_.failed(cls, Code::BadRequest, false, false);
    return reject(Code::BadRequest, "the prompt has " + std::to_string(length) +
                                        " tokens; with one generated token that is more than the KV cache holds (" +
                                        std::to_string(cache_.blocks * block_size_) + " tokens)");
  }
  for (TokenId id : request.prompt)
    if (id < 0 || (vocab_ > 0 && id >= vocab_)) {
      stats_.failed(cls, Code::BadRequest, false, false);
      return reject(Code::BadRequest, "token id " + std::to_string(id) + " is outside the vocabulary [0, " +
                                          std::to_string(vocab_) + ")");
    }
  try {
    s->gen.emplace(request.prompt, request.options, tokenizer_, context_);
  } catch (const Error& e) {
    stats_.failed(cls, Code::BadRequest, false, false);
    return reject(Code::BadRequest, e.what());
  }
  s->prompt = std::move(request.prompt);
  s->pending = s->prompt;
  std::unique_lock lock(mu_);
  if (draining_) {
    lock.unlock();
    stats_.failed(cls, Code::Unavailable, false, false);
    return reject(Code::Unavailable, "the server is shutting down");
  }
  if (static_cast<int64_t>(s->cls->waiting.size()) >= s->cls->cls.max_queue_size) {
    lock.unlock();
    stats_.failed(cls, Code::Unavailable, false, false);
    return reject(Code::Unavailable, "the queue of class '" + cls + "' is full (" +
                                         std::to_string(s->cls->cls.max_queue_size) + " requests)");
  }
  const uint64_t id = s->id = next_id_++;
  s->events = std::move(events);  // only now: every refusal above answers through `events`
  stats_.queued(cls);
  s->cls->last_arrival = Clock::now();
  if (s->cls->cls.priority < interruptible_below_) abandon_.store(true, std::memory_order_relaxed);
  s->cls->waiting.push_back(std::move(s));
  cv_.notify_all();
  return id;
}

void GenerationScheduler::cancel(uint64_t id) {
  std::lock_guard lock(mu_);
  cancels_.insert(id);
  cv_.notify_all();
}

void GenerationScheduler::drain() {
  {
    std::lock_guard lock(mu_);
    draining_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

GenerativeModel::Load GenerationScheduler::load() const {
  std::lock_guard lock(mu_);
  GenerativeModel::Load out;
  out.running = static_cast<int64_t>(running_.size());
  for (const ClassQueue& q : queues_) out.waiting += static_cast<int64_t>(q.waiting.size());
  out.cache = cache_;
  return out;
}

int64_t GenerationScheduler::blocks_needed(const Sequence& s, int64_t more) const {
  const int64_t held = s.slot >= 0 ? batch_.length(s.slot) : 0;
  return blocks_for(held + more, block_size_) - blocks_for(held, block_size_);
}

int64_t GenerationScheduler::free_blocks() const {
  const KvCacheStats c = batch_.cache();
  return c.blocks - c.blocks_used;
}

void GenerationScheduler::sweep_waiting(Clock::time_point now, std::vector<std::unique_ptr<Sequence>>& done) {
  for (ClassQueue& q : queues_) {
    const auto timeout = std::chrono::duration<double, std::milli>(q.cls.timeout_ms);
    for (auto it = q.waiting.begin(); it != q.waiting.end();) {
      Sequence& s = **it;
      s.cancelled = s.cancelled || cancels_.erase(s.id) > 0;
      // A preempted sequence has started: it waits for room, not for a first chance.
      if (s.cancelled || (!s.started && q.cls.timeout_ms > 0 && now - s.arrived > timeout)) {  // 0: never
        done.push_back(std::move(*it));
        it = q.waiting.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& s : running_) s->cancelled = s->cancelled || cancels_.erase(s->id) > 0;
  cancels_.clear();  // ids that already finished
}

GenerationScheduler::Sequence* GenerationScheduler::worst_running(int64_t worse_than_priority) {
  Sequence* worst = nullptr;
  for (auto& s : running_) {
    if (s->cls->cls.priority <= worse_than_priority) continue;
    if (!worst || s->cls->cls.priority > worst->cls->cls.priority ||
        (s->cls->cls.priority == worst->cls->cls.priority && s->admitted_order > worst->admitted_order))
      worst = s.get();
  }
  return worst;
}

void GenerationScheduler::preempt(Sequence& s) {
  batch_.remove(s.slot);
  s.slot = -1;
  cache_ = batch_.cache();
  // Recompute: the prompt and every token chosen so far (the last one was never fed).
  s.pending = s.prompt;
  const std::vector<TokenId>& out = s.gen->output_ids();
  s.pending.insert(s.pending.end(), out.begin(), out.end());
  s.fed = 0;
  --s.cls->running;
  stats_.preempted(s.cls->name);
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
  s.cls->waiting.push_front(std::move(*it));
  running_.erase(it);
}

void GenerationScheduler::admit(Clock::time_point now) {
  // Blocks the running sequences still need for what they have left to feed.
  int64_t reserved = 0;
  for (const auto& s : running_) reserved += blocks_needed(*s, static_cast<int64_t>(s->pending.size() - s->fed));
  for (ClassQueue& q : queues_) {
    while (!q.waiting.empty()) {
      if (q.cls.max_running > 0 && q.running >= q.cls.max_running) break;
      Sequence& s = *q.waiting.front();
      const int64_t need = blocks_for(static_cast<int64_t>(s.pending.size()) + 1, block_size_);
      if (need > cache_.blocks) {
        // Preempted after growing past what the whole pool holds: it can never run again.
        std::unique_ptr<Sequence> owned = std::move(q.waiting.front());
        q.waiting.pop_front();
        finish(*owned, {}, "length");
        continue;
      }
      const bool room = static_cast<int64_t>(running_.size()) < config_.max_sequences && need <= free_blocks() - reserved;
      if (!room) {
        // A better class takes the place of a worse one; otherwise everyone after waits too
        // (admission stays in priority order).
        Sequence* victim = worst_running(q.cls.priority);
        if (!victim) return;
        reserved -= blocks_needed(*victim, static_cast<int64_t>(victim->pending.size() - victim->fed));
        preempt(*victim);
        continue;
      }
      s.slot = batch_.add();
      s.admitted_order = ++admissions_;
      if (!s.started) {
        s.started = true;
        // `now` was taken before finishing aborted requests, whose callbacks run unlocked: a
        // request submitted meanwhile arrived after it, and its negative queue time made
        // request_queue_time_seconds_sum go down.
        const Clock::time_point admitted = std::max(now, s.arrived);
        s.gen->started(admitted);
        stats_.admitted(q.name, seconds(admitted - s.arrived));
      } else {
        stats_.readmitted(q.name);
      }
      ++q.running;
      reserved += need;
      running_.push_back(std::move(q.waiting.front()));
      q.waiting.pop_front();
    }
  }
}

void GenerationScheduler::compose_step(std::vector<DecoderBatch::Feed>& feeds, std::vector<Sequence*>& fed,
                                       std::vector<int64_t>& counts) {
  for (;;) {
    feeds.clear(), fed.clear(), counts.clear();
    std::vector<Sequence*> order;
    for (auto& s : running_) order.push_back(s.get());
    std::stable_sort(order.begin(), order.end(), [](const Sequence* a, const Sequence* b) {
      return a->cls->cls.priority != b->cls->cls.priority ? a->cls->cls.priority < b->cls->cls.priority
                                                          : a->admitted_order < b->admitted_order;
    });
    // A better class's requests arrive one at a time: it counts as busy for a while after the
    // last one, so the step in flight when the next one comes is already a short one.
    constexpr auto kBusyAfterArrival = std::chrono::seconds(1);
    const auto now = Clock::now();
    std::vector<ClassActivity> activity;
    for (const ClassQueue& q : queues_)
      activity.push_back({q.cls.priority, q.cls.prefill_chunk, q.cls.prefill_chunk_contended,
                          q.running > 0 || !q.waiting.empty() || now - q.last_arrival < kBusyAfterArrival});
    std::map<const ClassQueue*, int64_t> chunk;
    for (size_t i = 0; i < queues_.size(); ++i) chunk[&queues_[i]] = prefill_chunk_for(activity[i], activity);
    std::vector<StepCandidate> candidates;
    for (const Sequence* s : order)
      candidates.push_back({static_cast<int64_t>(reinterpret_cast<uintptr_t>(s->cls)), s->cls->cls.priority,
                            chunk.at(s->cls), static_cast<int64_t>(s->pending.size() - s->fed)});
    const std::vector<int64_t> tokens = compose_tokens(candidates, config_.step_tokens);
    int64_t needed = 0;
    for (bool decodes : {true, false})  // decode feeds first, then prompt chunks
      for (size_t i = 0; i < order.size(); ++i) {
        if (tokens[i] == 0 || (candidates[i].left == 1) != decodes) continue;
        Sequence* s = order[i];
        feeds.push_back({s->slot, std::span<const TokenId>(s->pending.data() + s->fed, static_cast<size_t>(tokens[i]))});
        fed.push_back(s);
        counts.push_back(tokens[i]);
        needed += blocks_needed(*s, tokens[i]);
      }
    if (needed <= free_blocks()) return;
    Sequence* victim = worst_running(-1);
    if (running_.size() == 1) {
      // Alone and still too big: the pool is the limit of this sequence's length.
      finish(*victim, {}, "length");
      continue;
    }
    preempt(*victim);
  }
}

std::unique_ptr<GenerationScheduler::Sequence> GenerationScheduler::retire(Sequence& s) {
  if (s.slot >= 0) batch_.remove(s.slot);
  s.slot = -1;
  cache_ = batch_.cache();  // before on_done: a caller told "done" sees the blocks free
  --s.cls->running;
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; });
  std::unique_ptr<Sequence> out = std::move(*it);
  running_.erase(it);
  return out;
}

// Completes a request that ran (or was cancelled while running or preempted); called without
// the sequence in any list.
void GenerationScheduler::finish(Sequence& s, const Status& status, const std::string& reason) {
  std::unique_ptr<Sequence> owned;
  if (s.slot >= 0 || std::any_of(running_.begin(), running_.end(), [&](const auto& p) { return p.get() == &s; }))
    owned = retire(s);
  GenerationOutcome out;
  out.status = status;
  out.prompt_tokens = static_cast<int64_t>(s.prompt.size());
  if (s.gen) out.result = s.gen->result();
  if (status.ok()) {
    out.finish_reason = reason;
    if (reason == "length") out.result.finish_reason = FinishReason::Length;
    stats_.finished(s.cls->name, reason, owned != nullptr, out.prompt_tokens,
                    static_cast<int64_t>(out.result.output_ids.size()), seconds(Clock::now() - s.arrived));
  } else {
    stats_.failed(s.cls->name, status.code, true, owned != nullptr);
  }
  if (s.events.on_done) {
    // Callbacks run without the lock: a protocol thread may be waiting on it.
    mu_.unlock();
    s.events.on_done(out);
    mu_.lock();
  }
}

void GenerationScheduler::loop() {
  if (on_thread_start_) on_thread_start_();
  std::vector<DecoderBatch::Feed> feeds;
  std::vector<Sequence*> fed;
  std::vector<int64_t> counts;
  std::vector<std::unique_ptr<Sequence>> swept;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      if (!running_.empty() || !cancels_.empty()) return true;
      for (const ClassQueue& q : queues_)
        if (!q.waiting.empty()) return true;
      return draining_;
    });
    const auto now = Clock::now();
    swept.clear();
    sweep_waiting(now, swept);
    for (auto& s : swept) {
      const bool aborted = s->cancelled;
      if (aborted) finish(*s, {}, "abort");
      else finish(*s, {Code::Unavailable, "waited longer than the class's timeout of " +
                                              std::to_string(static_cast<int64_t>(s->cls->cls.timeout_ms)) + " ms"}, "");
    }
    for (auto it = running_.begin(); it != running_.end();) {
      Sequence* s = (it++)->get();
      if (s->cancelled) finish(*s, {}, "abort");
    }
    admit(now);
    if (running_.empty()) {
      bool waiting = false;
      for (const ClassQueue& q : queues_) waiting = waiting || !q.waiting.empty();
      if (draining_ && !waiting) break;
      if (waiting) {
        // Nothing fits and nothing runs: a lone prompt too large for the pool as it stands can
        // only mean the pool is smaller than the prompt; submit() refuses those, so wait.
        cv_.wait_for(lock, std::chrono::milliseconds(5));
      }
      continue;
    }
    compose_step(feeds, fed, counts);
    if (feeds.empty()) continue;
    interruptible_below_ = kNotInterruptible;
    if (config_.interrupt_steps &&
        std::none_of(fed.begin(), fed.end(), [](const Sequence* s) { return s->interrupted; })) {
      interruptible_below_ = std::numeric_limits<int64_t>::max();
      for (const Sequence* s : fed) interruptible_below_ = std::min(interruptible_below_, s->cls->cls.priority);
    }
    abandon_.store(false, std::memory_order_relaxed);
    lock.unlock();
    std::span<const std::span<const float>> logits;
    std::string failure;
    try {
      logits = batch_.step(feeds, &abandon_);
    } catch (const std::exception& e) {
      failure = e.what();
    }
    const auto stepped = Clock::now();
    // The step's tokens and endings reach their streams' threads with one wake-up, at its end.
    std::optional<StreamHub::Step> hand_out(std::in_place, *hub_);
    const bool interrupted = failure.empty() && logits.empty();
    std::vector<Sequence*> done;
    for (Sequence* s : fed) s->interrupted = interrupted;
    if (interrupted) {
      std::set<const ClassQueue*> classes;
      for (const Sequence* s : fed) classes.insert(s->cls);
      for (const ClassQueue* q : classes) stats_.interrupted(q->name);
    } else if (failure.empty()) {
      for (size_t i = 0; i < fed.size(); ++i) {
        Sequence& s = *fed[i];
        s.fed += static_cast<size_t>(counts[i]);
        if (s.fed < s.pending.size()) continue;  // a prompt chunk: its logits are not a choice
        const bool first = s.gen->output_ids().empty();
        const bool finished = s.gen->accept(logits[i], batch_.length(s.slot), [&s](TokenId id, std::string_view text) {
          if (s.events.on_token) s.events.on_token(id, text, s.gen->done());  // done() already says
        });
        if (first) stats_.first_token(s.cls->name, seconds(stepped - s.arrived));
        else stats_.next_token(s.cls->name, seconds(stepped - s.last_token));
        s.last_token = stepped;
        if (finished) done.push_back(&s);
        else s.pending.assign(1, s.gen->last()), s.fed = 0;
      }
    }
    lock.lock();
    interruptible_below_ = kNotInterruptible;
    cache_ = batch_.cache();
    if (!failure.empty()) {
      for (Sequence* s : fed) finish(*s, {Code::Internal, "the model failed: " + failure}, "");
    }
    for (Sequence* s : done) finish(*s, {}, finish_reason_name(s->gen->result().finish_reason));
    hand_out.reset();
  }
}

}  // namespace fusor::serve
