// The iteration-level scheduler of a served decoder (continuous batching, issue #17). One thread
// runs steps over one DecoderBatch; each step runs
//   - the next token of every running sequence that has finished its prompt (decode), and
//   - chunks of prompts (chunked prefill), in class priority order, within serve.step_tokens in
//     all and each class's prefill_chunk (the prompt tokens a class adds to one step); a worse
//     class adds no prompt, and no decode token, to a step that prefills a better class's, so
//     the step that gives an interactive request its first token stays short; and while a
//     better class is busy a worse one's chunk is its prefill_chunk_contended, so the step that
//     an arriving interactive request waits for is short too;
// requests join between steps, highest-priority class first, while serve.max_sequences, their
// class's max_running and the KV pool allow.
//
// Interruption (serve.interrupt_steps): a request that arrives while the step in flight holds
// only worse classes' tokens stops that step between two kernels (DecoderBatch::step's abandon
// flag); nothing of it is committed, and its tokens run again after the newcomer's first step.
// So an interactive request does not wait for a batch step, at the cost of the part of that
// step already run. The re-run of a stopped step is not stopped again, so a stream of arrivals
// costs each worse step at most one repetition.
//
// Preemption: when the pool cannot hold the step's tokens, or a waiting request of a better
// class cannot be admitted, the running sequence of the worst class (the latest admitted among
// equals) leaves the pool and goes back to the front of its queue; when it runs again its prompt
// and the tokens it generated so far are prefilled again (recomputed), and generation goes on
// where it stopped: same sampler, same text stream, no token repeated or lost.
//
// Every accepted request gets exactly one on_done: finished, aborted (cancel), timed out in its
// queue (503), or failed (500, when a step throws: every sequence of that step fails, the others
// go on). drain() stops accepting and returns when every accepted request is done.
#pragma once
#include <atomic>
#include <chrono>
#include <limits>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fusor/config.h"
#include "fusor/decoder.h"
#include "generate/sequence_generation.h"
#include "serve/generation_stats.h"
#include "serve/generative_model.h"
#include "serve/stream_hub.h"

namespace fusor::serve {

class GenerationScheduler {
 public:
  // `on_thread_start` runs first on the scheduler's thread (sets its kernel thread count).
  GenerationScheduler(DecoderBatch batch, const ServeConfig& config, const Tokenizer* tokenizer, GenerationStats& stats,
                      std::function<void()> on_thread_start);
  ~GenerationScheduler();  // drains
  GenerationScheduler(const GenerationScheduler&) = delete;
  GenerationScheduler& operator=(const GenerationScheduler&) = delete;

  uint64_t submit(GenerationRequest request, GenerationEvents events);
  void cancel(uint64_t id);
  void drain();
  GenerativeModel::Load load() const;
  // The hub the requests' streams should wait on: a step's events wake them once, at its end.
  const std::shared_ptr<StreamHub>& stream_hub() const { return hub_; }

 private:
  using Clock = std::chrono::steady_clock;
  struct ClassQueue;
  struct Sequence {
    uint64_t id = 0;
    ClassQueue* cls = nullptr;
    std::vector<TokenId> prompt;
    GenerationEvents events;
    std::optional<SequenceGeneration> gen;
    DecoderBatch::SequenceId slot = -1;  // in the batch (holding blocks) while >= 0
    std::vector<TokenId> pending;        // to feed: not yet in the cache
    size_t fed = 0;                      // of pending, already in the cache
    Clock::time_point arrived, last_token;
    uint64_t admitted_order = 0;         // later admissions are preempted first
    bool started = false;                // admitted at least once
    bool cancelled = false;
    bool interrupted = false;            // its last step was stopped: the next one is not
  };
  struct ClassQueue {
    std::string name;
    TrafficClass cls;
    std::deque<std::unique_ptr<Sequence>> waiting;
    int64_t running = 0;
    Clock::time_point last_arrival{};  // of an accepted request
  };

  void loop();
  // With mu_ held: drops cancelled and timed-out waiting requests into `done`.
  void sweep_waiting(Clock::time_point now, std::vector<std::unique_ptr<Sequence>>& done);
  // Admits waiting requests while the limits allow, preempting worse classes for better ones.
  void admit(Clock::time_point now);
  // The step's feeds (decode first, then prefill chunks), preempting until the pool holds them.
  void compose_step(std::vector<DecoderBatch::Feed>& feeds, std::vector<Sequence*>& fed, std::vector<int64_t>& counts);
  // Blocks a sequence needs to hold `more` more tokens.
  int64_t blocks_needed(const Sequence& s, int64_t more) const;
  int64_t free_blocks() const;
  // Sends a running sequence back to the front of its queue, its cache dropped.
  void preempt(Sequence& s);
  Sequence* worst_running(int64_t worse_than_priority);
  // Takes a running sequence out (its blocks back to the pool) for completion.
  std::unique_ptr<Sequence> retire(Sequence& s);
  void finish(Sequence& s, const Status& status, const std::string& reason);
  ClassQueue* queue_of(const std::string& name);

  DecoderBatch batch_;
  const ServeConfig config_;
  const Tokenizer* tokenizer_;
  GenerationStats& stats_;
  std::function<void()> on_thread_start_;
  const int64_t context_, vocab_, block_size_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<ClassQueue> queues_;            // ascending priority (best first); deque: never moved
  std::list<std::unique_ptr<Sequence>> running_;
  std::set<uint64_t> cancels_;
  uint64_t next_id_ = 1, admissions_ = 0;
  bool draining_ = false;
  KvCacheStats cache_;  // as of the last step, for load()
  // The step in flight may be stopped by a request of a priority below this (better); the
  // lowest value when no step runs or the one that runs may not be stopped.
  static constexpr int64_t kNotInterruptible = std::numeric_limits<int64_t>::min();
  int64_t interruptible_below_ = kNotInterruptible;
  std::atomic<bool> abandon_{false};
  std::shared_ptr<StreamHub> hub_ = std::make_shared<StreamHub>();
  std::thread thread_;
};

}  // namespace fusor::serve
