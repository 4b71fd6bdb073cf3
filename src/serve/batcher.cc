#include "serve/batcher.h"

#include <algorithm>
#include <cstdio>

#include "fusor/error.h"
#include "serve/batch_window.h"

namespace fusor::serve {

namespace {

constexpr const char* kOneGroup = "packed";  // token mode: every request's group

int64_t tokens_of(const RequestShape& s) { return s.rows * std::max<int64_t>(1, s.seq); }

// How often take_ready asks every waiting request whether its client has gone. The sweep is
// O(queue); on every batch, a deep queue (max_queue_size raised, a model of microseconds) spent
// longer sweeping than computing. A request a batch takes is asked anyway, so none runs for a
// client that has gone; a sweep only frees queue places sooner.
constexpr auto kGoneSweepPeriod = std::chrono::milliseconds(5);

}  // namespace

Batcher::Batcher(const ServeConfig& config, Signature sig, RunBatch run, ModelStats& stats,
                 std::function<void(size_t)> on_context_start, RunPacked run_packed)
    : config_(config), sig_(std::move(sig)), run_(std::move(run)), run_packed_(std::move(run_packed)), stats_(stats),
      on_context_start_(std::move(on_context_start)), contexts_(std::max<int64_t>(1, config_.execution_contexts)) {
  for (const auto& [name, cls] : config_.classes) queues_.push_back({name, cls, {}, {}});
  const bool times_out = std::any_of(queues_.begin(), queues_.end(), [](const Queue& q) { return q.cls.timeout_ms > 0; });
  try {
    for (int64_t i = 0; i < contexts_; ++i) workers_.emplace_back([this, i] { work(static_cast<size_t>(i)); });
    if (times_out) workers_.emplace_back([this] { watch_timeouts(); });
  } catch (...) {  // a thread that could not start: the started ones must end before ~thread
    drain();
    throw;
  }
}

Batcher::~Batcher() { drain(); }

int64_t Batcher::max_batch() const {
  int64_t m = 1;
  for (const auto& q : queues_) m = std::max(m, q.cls.max_batch);
  return sig_.batched ? m : 0;
}

void Batcher::submit(Tensors inputs, const std::string& cls_name, Done done, ClientGone gone) {
  const std::string& name = cls_name.empty() ? config_.default_class : cls_name;
  auto q = std::find_if(queues_.begin(), queues_.end(), [&](const Queue& x) { return x.name == name; });
  auto reject = [&](Code code, const std::string& message) {
    refused(name, code);
    done({{code, message}, {}});
  };
  if (q == queues_.end()) {
    std::string names;
    for (const auto& x : queues_) names += (names.empty() ? "" : ", ") + x.name;
    return reject(Code::BadRequest, "unknown traffic class '" + name + "' (this server has: " + names + ")");
  }
  RequestShape shape;
  try {
    shape = sig_.check(inputs, sig_.seq_bucket(config_.seq_bucket));
    if (token_mode()) shape.group = kOneGroup;
  } catch (const RequestError& e) {
    return reject(e.code, e.message);
  }
  if (shape.rows > q->cls.max_batch)
    return reject(Code::BadRequest, "the request has " + std::to_string(shape.rows) + " rows; class '" + name +
                                        "' takes at most " + std::to_string(q->cls.max_batch));
  bool draining = false;
  {
    std::lock_guard lock(mu_);
    draining = draining_;
    if (!draining && static_cast<int64_t>(q->waiting.size()) < q->cls.max_queue_size) {
      stats_.queued(name);
      q->waiting.push_back({std::move(inputs), std::move(shape), Clock::now(), {}, std::move(done), std::move(gone), &*q, name});
      if (q->cls.adaptive_window) q->arrivals.arrived(q->waiting.back().shape.group, q->waiting.back().arrived);
      cv_.notify_one();
      if (q->cls.timeout_ms > 0 && q->waiting.size() == 1) timeouts_cv_.notify_one();  // a new oldest
      return;
    }
  }
  if (draining) return reject(Code::Unavailable, "the server is shutting down");
  reject(Code::Unavailable, "the queue of class '" + name + "' is full (" + std::to_string(q->cls.max_queue_size) +
                                " requests); retry later");
}

void Batcher::refused(const std::string& cls, Code code) {
  const bool known = std::any_of(queues_.begin(), queues_.end(), [&](const Queue& x) { return x.name == cls; });
  stats_.finished(known ? cls : config_.default_class, code, false, 0, 0, 0);
}

void Batcher::drain() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(mu_);
    draining_ = true;
    workers.swap(workers_);
  }
  cv_.notify_all();
  timeouts_cv_.notify_all();
  for (auto& w : workers) w.join();
}

Batcher::Batch Batcher::take_ready(Clock::time_point now, std::vector<Dropped>& dropped, Clock::time_point& wake) {
  using ms = std::chrono::duration<double, std::milli>;
  const int64_t idle = contexts_ - running_;  // this context among them
  Queue* best = nullptr;
  const bool sweep_gone = now - last_gone_sweep_ >= kGoneSweepPeriod;
  if (sweep_gone) last_gone_sweep_ = now;
  auto cancelled = [](const Request& r) { return r.gone && r.gone(); };
  auto drop = [&](Request& r, Status why) { take_unrun(r, std::move(why), now, dropped); };
  for (Queue& q : queues_) {
    auto& w = q.waiting;
    expire(q, now, dropped, wake);
    if (sweep_gone && std::any_of(w.begin(), w.end(), cancelled)) {
      for (auto& r : w)
        if (cancelled(r)) drop(r, client_cancelled());
      w.erase(std::remove_if(w.begin(), w.end(), [](const Request& r) { return r.taken; }), w.end());
    }
    if (w.empty()) continue;
    const Request& oldest = w.front();
    int64_t rows = 0, tokens = 0;  // of the forming batch, counted only as far as they can matter
    for (auto r = w.begin(); r != w.end() && !full(q.cls, rows, tokens); ++r)
      if (r->shape.group == oldest.shape.group) rows += r->shape.rows, tokens += tokens_of(r->shape);
    FormingBatch forming;
    forming.oldest = oldest.arrived;
    forming.window = std::chrono::duration_cast<Clock::duration>(ms(q.cls.batch_window_ms));
    forming.rows = rows;
    forming.target = std::min(rows_per_batch(q.cls), q.cls.preferred_batch_sizes.empty()
                                                         ? q.cls.max_batch
                                                         : q.cls.preferred_batch_sizes.back());
    if (token_mode()) {  // fills by tokens; the row limit still closes it
      forming.target = q.cls.max_batch_tokens;
      forming.rows = rows >= q.cls.max_batch ? forming.target : tokens;
    }
    forming.idle_contexts = idle;
    forming.adaptive = q.cls.adaptive_window;
    forming.hold_began = now;
    if (const ArrivalRate* rate = forming.adaptive ? q.arrivals.find(oldest.shape.group) : nullptr) {
      forming.expected_gap = rate->expected_gap();
      forming.last_arrival = rate->last_arrival();
      forming.silence_limit = rate->silence_limit();
      forming.hold_began = rate->hold_began().value_or(now);
    }
    if (forming.adaptive && q.recent_run > Clock::duration::zero()) forming.run_time = q.recent_run;
    const auto closes = batch_closes_at(forming);
    if (draining_ || closes <= now) {
      if (!best || q.cls.priority < best->cls.priority ||
          (q.cls.priority == best->cls.priority && oldest.arrived < best->waiting.front().arrived))
        best = &q;
    } else {
      wake = std::min(wake, closes);
    }
  }
  Batch batch;
  if (!best) return batch;
  batch.queue = best;
  auto& w = best->waiting;
  const std::string group = w.front().shape.group;
  int64_t rows = 0, tokens = 0;
  size_t taken = 0;
  for (auto r = w.begin(); r != w.end() && !full(best->cls, rows, tokens); ++r) {
    if (r->shape.group != group || (rows > 0 && rows + r->shape.rows > rows_per_batch(best->cls))) continue;
    if (token_mode() && rows > 0 && tokens + tokens_of(r->shape) > best->cls.max_batch_tokens) continue;
    ++taken;
    if (cancelled(*r)) {
      drop(*r, client_cancelled());
      continue;
    }
    rows += r->shape.rows;
    tokens += tokens_of(r->shape);
    r->dispatched = now;
    r->taken = true;
    batch.requests.push_back(std::move(*r));
  }
  // Taken in order, usually from the front: erase only what a batch took, not the whole queue.
  while (taken > 0 && !w.empty() && w.front().taken) w.pop_front(), --taken;
  if (taken > 0) w.erase(std::remove_if(w.begin(), w.end(), [](const Request& r) { return r.taken; }), w.end());
  if (batch.requests.empty()) batch.queue = nullptr;  // every request it took had been cancelled
  return batch;
}

void Batcher::take_unrun(Request& r, Status why, Clock::time_point now, std::vector<Dropped>& dropped) {
  r.dispatched = now;
  r.taken = true;
  dropped.push_back({std::move(r), std::move(why)});
}

void Batcher::expire(Queue& q, Clock::time_point now, std::vector<Dropped>& dropped, Clock::time_point& wake) {
  if (q.cls.timeout_ms <= 0) return;  // 0: never
  const auto timeout = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(q.cls.timeout_ms));
  auto& w = q.waiting;
  // Arrivals are queued in time order, so the requests that timed out are a prefix.
  while (!w.empty() && now - w.front().arrived > timeout) {
    take_unrun(w.front(), {Code::Unavailable, "timed out in the queue of class '" + q.name + "'; retry later"}, now, dropped);
    w.pop_front();
  }
  if (!w.empty()) wake = std::min(wake, w.front().arrived + timeout);
}

void Batcher::watch_timeouts() {
  std::unique_lock lock(mu_);
  while (!draining_) {  // a drain answers every queued request itself
    std::vector<Dropped> dropped;
    const auto now = Clock::now();
    auto wake = now + std::chrono::hours(1);
    for (Queue& q : queues_) expire(q, now, dropped, wake);
    if (dropped.empty()) {
      timeouts_cv_.wait_until(lock, wake);
      continue;
    }
    lock.unlock();
    for (auto& d : dropped) complete(d.request.queue_name, d.request, {std::move(d.status), {}});
    lock.lock();
  }
}

bool Batcher::full(const TrafficClass& cls, int64_t rows, int64_t tokens) const {
  return rows >= rows_per_batch(cls) || (token_mode() && tokens >= cls.max_batch_tokens);
}

int64_t Batcher::rows_per_batch(const TrafficClass& cls) const {
  return sig_.batched && sig_.runs_alone.empty() ? cls.max_batch : 1;
}

void Batcher::note_holds(Clock::time_point now) {
  const bool idle = running_ < contexts_;
  for (Queue& q : queues_) {
    if (!q.cls.adaptive_window) continue;
    const bool held = idle && !draining_ && !q.waiting.empty();
    q.arrivals.hold_only(held ? &q.waiting.front().shape.group : nullptr, now);
  }
}

void Batcher::work(size_t context) {
  if (on_context_start_) on_context_start_(context);
  std::unique_lock lock(mu_);
  while (true) {
    std::vector<Dropped> dropped;
    auto now = Clock::now();
    auto wake = now + std::chrono::hours(1);
    Batch batch = take_ready(now, dropped, wake);
    if (batch.queue) ++running_;
    note_holds(now);
    bool more = std::any_of(queues_.begin(), queues_.end(), [](const Queue& q) { return !q.waiting.empty(); });
    if (!dropped.empty() || batch.queue) {
      if (more) cv_.notify_one();  // another idle context may take the next ready batch
      lock.unlock();
      for (auto& d : dropped) complete(d.request.queue_name, d.request, {std::move(d.status), {}});
      Clock::duration computed{};
      if (batch.queue) run(context, batch.requests, computed);
      lock.lock();
      if (batch.queue) {
        --running_;
        batch.queue->recent_run = next_run_time(batch.queue->recent_run, computed);
      }
      continue;
    }
    if (draining_ && !more) return;
    cv_.wait_until(lock, wake);
  }
}

bool Batcher::run(size_t context, std::vector<Request>& requests, Clock::duration& computed, bool pad_seq) {
  const Queue& q = *requests.front().queue;
  int64_t rows = 0, longest = -1;
  for (const auto& r : requests) rows += r.shape.rows, longest = std::max(longest, r.shape.seq);
  const int64_t padded_to = token_mode() ? -1 : padded_length(longest, pad_seq);
  std::vector<Tensors> outputs;
  Status failure;
  try {
    Ran ran = token_mode() ? run_packed(context, requests, rows) : run_padded(context, requests, rows, padded_to);
    outputs = std::move(ran.outputs);
    computed += ran.computed;
  } catch (const Error& e) {  // e.g. the model rejected the values (a token id out of range)
    failure = {code_of(e.kind()), std::string("inference failed: ") + e.what()};
  } catch (const std::exception& e) {
    failure = {Code::Internal, std::string("inference failed: ") + e.what()};
  }
  if (failure.ok()) {
    for (size_t i = 0; i < requests.size(); ++i) complete(q.name, requests[i], {{}, std::move(outputs[i])});
    return true;
  }
  // Padding may be what failed: a bucket past the model's maximum positions (seq_bucket: 384 pads
  // a 400-token request to 768 where MiniLM takes 512). Each then runs at its own length.
  const bool padding_suspect = padded_to > longest;
  if (requests.size() == 1 && !padding_suspect) {
    complete(q.name, requests[0], {failure, {}});
    return false;
  }
  bool every_one_ran = true;  // find the request that failed: each runs alone
  for (auto& r : requests) {
    std::vector<Request> one;
    one.push_back(std::move(r));
    every_one_ran = run(context, one, computed, !padding_suspect) && every_one_ran;
  }
  if (padding_suspect && every_one_ran) {
    int64_t known = padding_fails_at_.load();
    while (padded_to < known && !padding_fails_at_.compare_exchange_weak(known, padded_to)) {
    }
    if (padded_to < known)
      std::fprintf(stderr, "fusor serve: batches padded to %lld tokens fail where their requests run alone; "
                           "batches that would pad that far now pad to their longest request only\n",
                   static_cast<long long>(padded_to));
  }
  return every_one_ran;
}

int64_t Batcher::padded_length(int64_t longest, bool pad_seq) const {
  const int64_t padded = padded_seq(longest, sig_.seq_bucket(config_.seq_bucket));
  return !pad_seq || padded >= padding_fails_at_.load() ? longest : padded;
}

Batcher::Ran Batcher::run_padded(size_t context, const std::vector<Request>& requests, int64_t rows, int64_t batch_seq) {
  const Queue& q = *requests.front().queue;
  std::vector<Part> parts;
  int64_t useful = 0;
  for (const auto& r : requests) {
    parts.push_back({&r.inputs, r.shape});
    useful += tokens_of(r.shape);
  }
  // A model that couples rows (runs_alone) gets no padding rows either: they would be batch-mates.
  const int64_t batch_rows = padded_rows(q.cls, sig_.batched && sig_.runs_alone.empty(), rows);
  auto t0 = Clock::now();
  Tensors out = run_(context, assemble(sig_, parts, batch_rows, batch_seq, config_.pad_values));
  const auto took = Clock::now() - t0;
  stats_.batch_ran(q.name, batch_rows, requests.size(), static_cast<uint64_t>(std::chrono::nanoseconds(took).count()));
  const int64_t computed = batch_rows * std::max<int64_t>(1, batch_seq);
  stats_.tokens_ran(q.name, useful, computed, computed);
  return {split(sig_, out, parts), took};
}

Batcher::Ran Batcher::run_packed(size_t context, const std::vector<Request>& requests, int64_t rows) {
  const Queue& q = *requests.front().queue;
  std::vector<const Tensors*> inputs;
  int64_t useful = 0, bucket_plan = 0;
  for (const auto& r : requests) {
    inputs.push_back(&r.inputs);
    useful += tokens_of(r.shape);
    bucket_plan += r.shape.rows * std::max<int64_t>(1, padded_seq(r.shape.seq, config_.seq_bucket));
  }
  auto t0 = Clock::now();
  std::vector<Tensors> out = run_packed_(context, inputs);
  const auto took = Clock::now() - t0;
  stats_.batch_ran(q.name, rows, requests.size(), static_cast<uint64_t>(std::chrono::nanoseconds(took).count()));
  // bucket_plan: what length buckets would have computed for the same requests, each padded to its
  // seq_bucket multiple (a lower bound: their batches also pad rows).
  stats_.tokens_ran(q.name, useful, packed_capacity(useful, config_.token_bucket), bucket_plan);
  return {std::move(out), took};
}

void Batcher::complete(const std::string& cls, Request& r, Completion c) {
  auto now = Clock::now();
  auto ns = [](Clock::duration d) { return static_cast<uint64_t>(std::chrono::nanoseconds(d).count()); };
  stats_.finished(cls, c.status.code, true, ns(r.dispatched - r.arrived), ns(now - r.arrived), r.shape.rows);
  Done done = std::move(r.done);
  done(std::move(c));
}

}  // namespace fusor::serve
