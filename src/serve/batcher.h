// The dynamic batcher of one served model: a queue per traffic class, and N execution contexts
// (worker threads) that take ready batches from them.
//
// A class's forming batch is the requests in the group of its oldest request (equal shapes after
// sequence bucketing). It is ready when it fills max_batch rows (or its largest preferred batch
// size), or when waiting can no longer help (serve/batch_window.h): its oldest request has waited
// batch_window_ms, the upper bound; or, with the adaptive window (the default; a class's
// adaptive_window: false keeps the fixed one), a context is idle and the group's next arrival is
// not expected before the window ends. So at low load a request waits about nothing, and while
// every context is busy, or requests arrive densely, batches still fill. Each group's arrivals
// are estimated from what the batcher saw (serve/arrival_rate.h).
//
// A free worker takes the ready batch of the class with the lowest priority number (the oldest
// request breaks ties). A forming batch holds no worker, so a class with a short window
// (interactive) never waits behind a long window; it can only wait for a batch already
// computing. The batch is padded up to a batch-size bucket (the smallest preferred batch size
// that fits, else the next power of two up to max_batch) and its sequence to a multiple of
// seq_bucket, so each context keeps a bounded set of plans.
//
// Token mode (packed serving of an encoder, fusor/packed.h): every request joins one group,
// whatever its length, and a batch fills by real tokens: it is ready when it holds the class's
// max_batch_tokens (or max_batch rows), and takes requests in arrival order while both limits
// hold (a request larger than the budget runs alone). Nothing is padded: RunPacked gets the
// requests as they came.
//
// Requests are never dropped silently: each completion runs exactly once, with outputs or an
// error: 503 when the class's queue is full, when a request waits longer than timeout_ms (a
// timekeeper thread answers it then, even while every context is busy), or when submitted after
// drain() began. drain() runs everything already accepted before returning. A batch that fails
// is rerun request by request, so a request the model rejects fails alone; a failed batch padded
// past its longest request reruns them at their own lengths (a bucket past the model's maximum
// positions), and batches then stop padding that far.
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fusor/config.h"
#include "serve/arrival_rate.h"
#include "serve/batch_assembly.h"
#include "serve/stats.h"
#include "serve/status.h"

namespace fusor::serve {

struct Completion {
  Status status;
  Tensors outputs;
};
using Done = std::function<void(Completion)>;
// Whether the request's client has gone (a cancelled or expired gRPC call): polled by the batcher,
// which drops the request unrun if it is still waiting.
using ClientGone = std::function<bool()>;

// Runs one assembled batch on execution context `context` (0..N-1). Called only from that
// context's own thread. May throw; the batcher then retries the batch's requests one by one, so a
// request the model rejects fails alone.
using RunBatch = std::function<Tensors(size_t context, const Tensors& batch)>;
// Token mode: runs the requests in one packed step; returns each one's outputs, in order.
using RunPacked = std::function<std::vector<Tensors>(size_t context, const std::vector<const Tensors*>& requests)>;

class Batcher {
 public:
  // `on_context_start(i)` runs first on context i's thread (sets its OpenMP thread count).
  // With `run_packed` the batcher works in token mode (`run` is then unused).
  Batcher(const ServeConfig& config, Signature sig, RunBatch run, ModelStats& stats,
          std::function<void(size_t)> on_context_start = {}, RunPacked run_packed = {});
  ~Batcher();  // drains
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Queues a request for class `cls` ("" = the default class). `done` runs exactly once: from a
  // worker, or right here when the request is rejected (unknown class, too many rows, queue
  // full, draining). A request whose `gone` says so by the time a batch would take it is
  // answered Cancelled without running.
  void submit(Tensors inputs, const std::string& cls, Done done, ClientGone gone = {});
  // Counts a request refused before submit() (a body that does not parse) or by it, so that
  // /metrics accounts for every request; an unknown class counts under the default one.
  void refused(const std::string& cls, Code code);
  // Stops accepting, finishes every queued request, joins the workers. Idempotent.
  void drain();

  int64_t max_batch() const;  // the largest max_batch of any class
  bool token_mode() const { return static_cast<bool>(run_packed_); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Queue;
  struct Request {
    Tensors inputs;
    RequestShape shape;
    Clock::time_point arrived, dispatched;
    Done done;
    ClientGone gone;
    const Queue* queue = nullptr;
    std::string queue_name;
    bool taken = false;  // left its queue (set before the move, so the moved-from entry is erased)
  };
  struct Queue {
    std::string name;
    TrafficClass cls;
    std::deque<Request> waiting;
    GroupArrivalRates arrivals;  // adaptive_window only
    Clock::duration recent_run{};  // its batches' compute time, next_run_time's average (0: none ran yet)
  };
  struct Batch {
    Queue* queue = nullptr;
    std::vector<Request> requests;
  };
  // A request taken from its queue unrun, and its answer.
  struct Dropped {
    Request request;
    Status status;
  };

  void work(size_t context);
  // The timekeeper's thread (only when a class has timeout_ms): answers requests that time out
  // while every context is busy, when they time out rather than when a context frees up.
  void watch_timeouts();
  // Marks `r` taken and moves it, with its answer, to `dropped`.
  static void take_unrun(Request& r, Status why, Clock::time_point now, std::vector<Dropped>& dropped);
  // With mu_ held: moves `q`'s timed-out requests (a prefix: arrivals are in time order) to
  // `dropped`, and lowers `wake` to when its next one times out.
  void expire(Queue& q, Clock::time_point now, std::vector<Dropped>& dropped, Clock::time_point& wake);
  // With mu_ held, by an idle context: the next batch to run, or none; fills `dropped` with
  // timed-out and cancelled requests and `wake` with when something next becomes due.
  Batch take_ready(Clock::time_point now, std::vector<Dropped>& dropped, Clock::time_point& wake);
  // A forming batch of `rows` (and `tokens`) can take no more of class `cls`.
  bool full(const TrafficClass& cls, int64_t rows, int64_t tokens) const;
  // The rows one batch may hold: the class's max_batch, or 1 where requests cannot share a run
  // (a model without a batch axis takes one request's inputs as they come; one whose rows
  // couple runs each alone). Such a batch is full, its window closed, with its first request.
  int64_t rows_per_batch(const TrafficClass& cls) const;
  // With mu_ held, after take_ready: which group of each class is now held back at an idle
  // context for a batch-mate (the time its arrival estimate learns from).
  void note_holds(Clock::time_point now);
  // Runs requests (one class, one group) as one batch and completes each of them; whether every
  // one succeeded. Adds the model's compute time to `computed`. `pad_seq` false runs the batch at
  // its longest request's length.
  bool run(size_t context, std::vector<Request>& requests, Clock::duration& computed, bool pad_seq = true);
  // One model run: each request's outputs, and how long the model took.
  struct Ran {
    std::vector<Tensors> outputs;
    Clock::duration computed{};
  };
  // run() in token mode, or padded to the class's row buckets and to `batch_seq`.
  Ran run_packed(size_t context, const std::vector<Request>& requests, int64_t rows);
  Ran run_padded(size_t context, const std::vector<Request>& requests, int64_t rows, int64_t batch_seq);
  // The length a padded batch whose longest request has `longest` tokens runs at (-1: no sequence).
  int64_t padded_length(int64_t longest, bool pad_seq) const;
  void complete(const std::string& cls, Request& r, Completion c);

  const ServeConfig config_;
  const Signature sig_;
  RunBatch run_;
  RunPacked run_packed_;
  ModelStats& stats_;
  std::function<void(size_t)> on_context_start_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable timeouts_cv_;  // the timekeeper's: a queue's oldest request changed, or drain
  std::vector<Queue> queues_;
  bool draining_ = false;
  Clock::time_point last_gone_sweep_{};  // when take_ready last asked every waiting request's client
  int64_t running_ = 0;  // contexts running a batch
  // The shortest padded length that failed where each of its requests ran alone at its own length
  // (a model's maximum positions, which a bucket past it exceeds); no batch is padded to it or past.
  std::atomic<int64_t> padding_fails_at_{INT64_MAX};
  int64_t contexts_ = 0;
  std::vector<std::thread> workers_;  // the contexts, then the timekeeper if any
};

}  // namespace fusor::serve
