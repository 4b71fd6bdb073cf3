// The adaptive batch window: when a forming batch closes, case by case and over every
// combination of its inputs, then with the arrival estimator in two traffic patterns played out
// on explicit time points (no clock, no sleeping).
#include "serve/batch_window.h"

#include <gtest/gtest.h>

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

// Requests every 1 ms, each batch taken by an idle context: batches gather ~window - gap worth
// of arrivals instead of leaving one by one.
TEST(BatchWindowWithArrivals, DenseArrivalsStillFillBatches) {
  ArrivalRate rate;
  std::optional<Clock::time_point> oldest;
  int64_t rows = 0;
  std::vector<int64_t> batches;
  auto close_if_due = [&](Clock::time_point now) {
    if (!oldest) return;
    FormingBatch b = forming(rows, 1, rate.expected_gap());
    b.oldest = *oldest;
    b.target = 16;
    Clock::time_point closes = batch_closes_at(b);
    if (closes > now) return rate.hold(now, true);
    rate.hold(std::max(*oldest, closes), false);
    batches.push_back(rows);
    oldest.reset();
    rows = 0;
  };
  for (int i = 0; i < 1000; ++i) {
    Clock::time_point now = t0 + i * 1ms;
    close_if_due(now);  // before this arrival
    rate.arrived(now);
    if (!oldest) oldest = now;
    ++rows;
    close_if_due(now);
  }
  ASSERT_GT(batches.size(), 50u);
  double mean = 0;
  for (size_t i = batches.size() - 50; i < batches.size(); ++i) mean += static_cast<double>(batches[i]) / 50;
  EXPECT_GE(mean, 6) << "the last 50 batches' mean rows";
  EXPECT_LE(mean, 9);
}

}  // namespace
}  // namespace fusor::serve
