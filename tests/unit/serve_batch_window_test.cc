// The adaptive batch window: when a forming batch closes, case by case and over every
// combination of its inputs, then with the arrival estimator in two traffic patterns played out
// on explicit time points (no clock, no sleeping).
#include "serve/batch_window.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "serve/arrival_rate.h"

namespace fusor::serve {
namespace {

using namespace std::chrono_literals;
using Clock = FormingBatch::Clock;
const Clock::time_point t0 = Clock::time_point{} + 1h;

FormingBatch forming(int64_t rows, int64_t idle, std::optional<Clock::duration> gap, bool adaptive = true) {
  FormingBatch b;
  b.oldest = t0;
  b.window = 8ms;
  b.rows = rows;
  b.target = 4;
  b.idle_contexts = idle;
  b.expected_gap = gap;
  b.adaptive = adaptive;
  return b;
}

TEST(BatchWindow, AFullBatchClosesAtOnce) {
  EXPECT_EQ(batch_closes_at(forming(4, 1, 1ms)), t0);
  EXPECT_EQ(batch_closes_at(forming(5, 0, 1ms)), t0);          // no context idle: ready for the next
  EXPECT_EQ(batch_closes_at(forming(4, 1, 1ms, false)), t0);   // the fixed window too
}

TEST(BatchWindow, TheFixedWindowWaitsItsWholeLength) {
  for (auto gap : {std::optional<Clock::duration>{}, std::optional<Clock::duration>{0ms}, std::optional<Clock::duration>{1s}})
    EXPECT_EQ(batch_closes_at(forming(1, 2, gap, false)), t0 + 8ms);
}

TEST(BatchWindow, WithNoContextIdleTheBatchKeepsCollecting) {
  EXPECT_EQ(batch_closes_at(forming(1, 0, 1s)), t0 + 8ms);
  EXPECT_EQ(batch_closes_at(forming(1, 0, std::nullopt)), t0 + 8ms);
}

TEST(BatchWindow, AnIdleContextWaitsOnlyWhileABatchMateIsExpected) {
  EXPECT_EQ(batch_closes_at(forming(1, 1, std::nullopt)), t0);  // nothing known predicts one
  EXPECT_EQ(batch_closes_at(forming(1, 1, 8ms)), t0);           // not before the window ends
  EXPECT_EQ(batch_closes_at(forming(1, 1, 30ms)), t0);
  EXPECT_EQ(batch_closes_at(forming(1, 1, 3ms)), t0 + 5ms);     // one is expected until 5 ms
  EXPECT_EQ(batch_closes_at(forming(3, 2, 0ms)), t0 + 8ms);     // dense arrivals: it fills
}

// Dense arrivals expected, but a batch runs in 50 us: an idle context holds it no longer than
// that from when it began to hold, however much of the window is left.
TEST(BatchWindow, AnIdleContextHoldsNoLongerThanABatchRuns) {
  FormingBatch b = forming(2, 1, 10us);
  b.run_time = 50us;
  b.hold_began = t0 + 1ms;
  EXPECT_EQ(batch_closes_at(b), t0 + 1050us);
  b.idle_contexts = 0;  // no context idle: nothing is held, the batch collects for the window
  EXPECT_EQ(batch_closes_at(b), t0 + 8ms);
}

TEST(BatchWindow, AZeroWindowClosesAtOnceWhateverElse) {
  for (int64_t idle : {0, 1})
    for (bool adaptive : {false, true}) {
      FormingBatch b = forming(1, idle, 1ms, adaptive);
      b.window = 0ms;
      EXPECT_EQ(batch_closes_at(b), t0);
    }
}

// Every combination: the batch closes within [oldest, oldest + window]; only a full batch
// closes before the window without the adaptive rule and an idle context; a longer expected gap
// never closes it later.
TEST(BatchWindow, EveryCombinationKeepsTheBounds) {
  const std::vector<std::optional<Clock::duration>> gaps = {std::nullopt, 0ms, 1ms, 3ms, 7999us, 8ms, 9ms, 1h};
  for (int64_t rows = 0; rows <= 5; ++rows)
    for (int64_t idle = 0; idle <= 3; ++idle)
      for (bool adaptive : {false, true}) {
        Clock::time_point previous = t0;
        for (size_t g = 0; g < gaps.size(); ++g) {
          SCOPED_TRACE(testing::Message() << "rows " << rows << " idle " << idle << " adaptive " << adaptive << " gap #" << g);
          Clock::time_point at = batch_closes_at(forming(rows, idle, gaps[g], adaptive));
          EXPECT_GE(at, t0);
          EXPECT_LE(at, t0 + 8ms);
          if (rows < 4 && (!adaptive || idle == 0)) EXPECT_EQ(at, t0 + 8ms);
          if (g > 1) EXPECT_LE(at, previous);  // gaps[1..] ascend
          previous = at;
        }
      }
}

// One client, one request at a time: it sends the next 4.5 ms after each answer, so a held
// request never gets a batch-mate. The mean gap (4.5 ms) alone would hold every request ~3.5 ms
// of the 8 ms window; what the holds taught makes them negligible after the first.
TEST(BatchWindowWithArrivals, AClosedLoopClientStopsPayingTheWindow) {
  ArrivalRate rate;
  Clock::time_point t = t0;
  std::vector<double> waited_ms;
  for (int i = 0; i < 200; ++i) {
    rate.arrived(t);
    FormingBatch b = forming(1, 1, rate.expected_gap());
    b.oldest = t;
    b.target = 8;
    Clock::time_point closes = std::max(t, batch_closes_at(b));
    rate.hold(t, closes > t);
    rate.hold(closes, false);
    waited_ms.push_back(std::chrono::duration<double, std::milli>(closes - t).count());
    t = closes + 4500us;
  }
  EXPECT_EQ(waited_ms[0], 0) << "the first request: no gap known yet";
  EXPECT_GT(waited_ms[1], 3) << "the second: the gap alone predicts a batch-mate";
  double later = 0;
  for (int i = 100; i < 200; ++i) later += waited_ms[i];
  EXPECT_LT(later / 100, 0.2) << "mean wait of the last 100 requests, ms";
}

// One idle context taking each batch as it closes, for requests arriving at `arrivals`: the mean
// rows of the last 50 batches.
double mean_batch_rows(const std::vector<Clock::time_point>& arrivals) {
  ArrivalRate rate;
  std::optional<Clock::time_point> oldest;
  int64_t rows = 0;
  std::vector<int64_t> batches;
  auto close_if_due = [&](Clock::time_point now) {
    if (!oldest) return;
    FormingBatch b = forming(rows, 1, rate.expected_gap());
    b.oldest = *oldest;
    b.target = 16;
    b.last_arrival = rate.last_arrival();
    b.silence_limit = rate.silence_limit();
    Clock::time_point closes = batch_closes_at(b);
    if (closes > now) return rate.hold(now, true);
    rate.hold(std::max(*oldest, closes), false);
    batches.push_back(rows);
    oldest.reset();
    rows = 0;
  };
  for (Clock::time_point now : arrivals) {
    close_if_due(now);  // before this arrival
    rate.arrived(now);
    if (!oldest) oldest = now;
    ++rows;
    close_if_due(now);
  }
  if (batches.size() < 50) return 0;
  double mean = 0;
  for (size_t i = batches.size() - 50; i < batches.size(); ++i) mean += static_cast<double>(batches[i]) / 50;
  return mean;
}

// Requests every 1 ms, each batch taken by an idle context: batches gather ~window - gap worth
// of arrivals instead of leaving one by one.
TEST(BatchWindowWithArrivals, DenseArrivalsStillFillBatches) {
  std::vector<Clock::time_point> arrivals;
  for (int i = 0; i < 1000; ++i) arrivals.push_back(t0 + i * 1ms);
  const double mean = mean_batch_rows(arrivals);
  EXPECT_GE(mean, 6) << "the last 50 batches' mean rows";
  EXPECT_LE(mean, 9);
}

// The same rate as Poisson arrivals: a silence that ends a batch early (twice the longest recent
// one) is rare, so batches still gather most of the window's arrivals (8.3 rows, 8.4 without the
// silence limit).
TEST(BatchWindowWithArrivals, PoissonArrivalsStillFillBatches) {
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap_ms(1.0);
  std::vector<Clock::time_point> arrivals;
  Clock::time_point t = t0;
  for (int i = 0; i < 20000; ++i) arrivals.push_back(t += std::chrono::duration_cast<Clock::duration>(
                                                         std::chrono::duration<double, std::milli>(gap_ms(rng))));
  EXPECT_GE(mean_batch_rows(arrivals), 6.5) << "the last 50 batches' mean rows";
}

// `clients` closed-loop clients on one context: each sends its next request `rtt` (50 us + 30 us
// per client index) after its answer. A batch of any size computes for `compute`, then hands its
// answers out one after another, `handoff` apart (each wakes its client's thread), and the context
// is busy until the last is out. The hold cap (run_time) is learnt as the batcher learns it, from
// `initial_run_time` on. Played out in 5 us steps for 2 s; the last second is measured.
struct ClosedLoop {
  int clients = 4;
  Clock::duration compute{};
  int64_t target = 8;
  Clock::duration handoff{};
  Clock::duration initial_run_time{};
};
struct ClosedLoopResult {
  double mean_wait_ms = -1;
  double mean_rows = 0;
  double requests_per_s = 0;
};

ClosedLoopResult closed_loop(const ClosedLoop& c) {
  ArrivalRate rate;
  std::vector<Clock::time_point> sends(static_cast<size_t>(c.clients), t0);
  for (int i = 0; i < c.clients; ++i) sends[static_cast<size_t>(i)] += i * 30us;
  std::vector<std::pair<int, Clock::time_point>> queue;  // client, arrival
  Clock::time_point busy_until = t0;
  Clock::duration run_time = c.initial_run_time;
  double waited = 0;
  int counted = 0, batches = 0;
  for (Clock::time_point t = t0; t < t0 + 2s; t += 5us) {
    for (int i = 0; i < c.clients; ++i)
      if (sends[static_cast<size_t>(i)] <= t) {
        rate.arrived(t);
        queue.emplace_back(i, t);
        sends[static_cast<size_t>(i)] = Clock::time_point::max();
      }
    if (busy_until > t || queue.empty()) {
      rate.hold(t, false);
      continue;
    }
    FormingBatch b = forming(static_cast<int64_t>(queue.size()), 1, rate.expected_gap());
    b.oldest = queue.front().second;
    b.target = c.target;
    b.last_arrival = rate.last_arrival();
    b.silence_limit = rate.silence_limit();
    if (run_time > Clock::duration::zero()) b.run_time = run_time;
    b.hold_began = rate.hold_began().value_or(t);
    if (batch_closes_at(b) > t) {
      rate.hold(t, true);
      continue;
    }
    rate.hold(t, false);
    const Clock::time_point computed = t + c.compute;
    run_time = next_run_time(run_time, c.compute);
    int k = 0;
    for (const auto& [client, arrived] : queue) {
      if (t >= t0 + 1s) waited += std::chrono::duration<double, std::milli>(t - arrived).count(), ++counted;
      busy_until = computed + k++ * c.handoff;
      sends[static_cast<size_t>(client)] = busy_until + 50us + client * 30us;
    }
    if (t >= t0 + 1s) ++batches;
    queue.clear();
  }
  if (!counted) return {};
  return {waited / counted, static_cast<double>(counted) / batches, static_cast<double>(counted)};
}

double closed_loop_mean_wait_ms(int clients, Clock::duration compute, int64_t target) {
  return closed_loop({clients, compute, target}).mean_wait_ms;
}

// Four clients, one request each at a time, batches of up to 8: a held batch never gets a fifth
// request, however short the gaps within its burst. The holds' rate alone settled at a gap of a
// quarter of the window, and every batch waited ~6 ms of the 8 ms window for a request that could
// not come (the hunt measured 583 req/s at four clients against 2760 at one, on a model of 36 us).
// A batch now also closes after a silence twice the longest that recently ended in an arrival.
TEST(BatchWindowWithArrivals, ClosedLoopClientsFewerThanABatchStopWaiting) {
  for (int clients : {2, 3, 4, 6})
    for (Clock::duration compute : {Clock::duration{36us}, Clock::duration{6ms}})
      EXPECT_LT(closed_loop_mean_wait_ms(clients, compute, 8), 1.0)
          << clients << " clients, compute " << std::chrono::duration<double, std::milli>(compute).count() << " ms";
}

// More clients than a batch holds: batches fill, and nobody waits for the window either.
TEST(BatchWindowWithArrivals, ClosedLoopClientsBeyondABatchFillIt) {
  EXPECT_LT(closed_loop_mean_wait_ms(16, 6ms, 8), 8.0);
}

// The hold cap is learnt from compute alone. Learnt from the whole run, answers' hand-off
// included, it grew with the batch it capped: once a stall had gathered four closed-loop clients
// into one batch, each such batch's run covered the next gathering, and the server could stay in
// that state at 57-75% of the throughput it had without the stall (here with hand-offs of 100 and
// 200 us; perf_analyzer measured 3,600 against 6,100 req/s, flipping within a run). Started in
// that state (a 1 ms cap), it now serves within 10% of the throughput it has without it.
TEST(BatchWindowWithArrivals, AGroupGatheredByAStallDoesNotHoldItselfTogether) {
  for (Clock::duration handoff : {Clock::duration{20us}, Clock::duration{50us}, Clock::duration{100us},
                                  Clock::duration{200us}}) {
    const ClosedLoopResult steady = closed_loop({4, 30us, 8, handoff});
    const ClosedLoopResult after_stall = closed_loop({4, 30us, 8, handoff, 1ms});
    EXPECT_GT(after_stall.requests_per_s, 0.9 * steady.requests_per_s)
        << "hand-off " << std::chrono::duration<double, std::micro>(handoff).count() << " us: "
        << after_stall.requests_per_s << " requests in the last second (" << after_stall.mean_rows
        << " a batch) against " << steady.requests_per_s << " (" << steady.mean_rows << ")";
  }
}

TEST(BatchWindow, TheRunTimeAverageLearnsComputeAndClipsAStall) {
  EXPECT_EQ(next_run_time(Clock::duration::zero(), 40us), 40us);  // the first batch
  EXPECT_EQ(next_run_time(40us, Clock::duration::zero()), 40us);  // nothing ran
  EXPECT_EQ(next_run_time(40us, 48us), 41us);
  EXPECT_EQ(next_run_time(40us, 3ms), 45us);  // counted as 80 us, twice the average
  Clock::duration d = 40us;
  for (int i = 0; i < 200; ++i) d = next_run_time(d, 1ms);
  EXPECT_GT(d, 990us) << "a model that became slower is learnt, if not in one batch";
}

}  // namespace
}  // namespace fusor::serve
