// The arrival estimator of the adaptive batch window, driven by explicit time points: no clock,
// no sleeping.
#include "serve/arrival_rate.h"

#include <gtest/gtest.h>

namespace fusor::serve {
namespace {

using namespace std::chrono_literals;
using Clock = ArrivalRate::Clock;
const Clock::time_point t0{};

double ms(std::optional<Clock::duration> d) { return std::chrono::duration<double, std::milli>(d.value()).count(); }

TEST(ArrivalRate, NoEstimateUntilTwoArrivalsGiveAGap) {
  ArrivalRate r;
  EXPECT_FALSE(r.expected_gap());
  r.arrived(t0);
  EXPECT_FALSE(r.expected_gap());
  r.arrived(t0 + 10ms);
  EXPECT_DOUBLE_EQ(ms(r.expected_gap()), 10);
}

TEST(ArrivalRate, NeverHeldTheMeanGapOfRecentArrivalsCounts) {
  ArrivalRate r;
  r.arrived(t0);
  r.arrived(t0 + 10ms);
  r.arrived(t0 + 12ms);  // a gap of 2 ms moves the mean an eighth of the way: 10 - 8/8
  EXPECT_DOUBLE_EQ(ms(r.expected_gap()), 9);
  for (int i = 1; i <= 100; ++i) r.arrived(t0 + 12ms + i * 3ms);
  EXPECT_NEAR(ms(r.expected_gap()), 3, 0.01);  // the old gaps are forgotten
}

// The closed-loop client: it sends its next request only after the answer, so a hold never sees
// an arrival. Held time without arrivals lengthens the estimate.
TEST(ArrivalRate, AHoldWithoutArrivalsLengthensTheEstimate) {
  ArrivalRate r;
  r.arrived(t0);
  r.arrived(t0 + 10ms);
  r.hold(t0 + 10ms, true);
  r.hold(t0 + 12ms, true);  // still held: the hold began at 10 ms
  r.hold(t0 + 15ms, false);
  r.hold(t0 + 40ms, false);  // not held: nothing accrues
  // 5 ms held with no arrival, and the mean gap (10 ms) as one arrival of evidence.
  EXPECT_DOUBLE_EQ(ms(r.expected_gap()), 15);
}

// Arrivals during holds: the estimate moves to the rate seen while held, whatever the gaps were
// before.
TEST(ArrivalRate, ArrivalsWhileHeldGiveTheHeldRate) {
  ArrivalRate r;
  r.arrived(t0);
  r.arrived(t0 + 10ms);
  r.hold(t0 + 10ms, true);
  for (int i = 1; i <= 3; ++i) r.arrived(t0 + 10ms + i * 1ms);
  EXPECT_LT(ms(r.expected_gap()), 3);
  EXPECT_GT(ms(r.expected_gap()), 1);
  for (int i = 4; i <= 300; ++i) r.arrived(t0 + 10ms + i * 1ms);
  EXPECT_NEAR(ms(r.expected_gap()), 1, 0.05);
}

TEST(ArrivalRate, OldHeldEvidenceFades) {
  ArrivalRate r;
  r.arrived(t0);
  r.arrived(t0 + 5ms);
  r.hold(t0 + 5ms, true);
  r.hold(t0 + 105ms, false);  // 100 ms held in vain
  EXPECT_DOUBLE_EQ(ms(r.expected_gap()), 105);
  Clock::time_point t = t0 + 105ms;
  for (int i = 0; i < 600; ++i) r.arrived(t += 5ms);  // never held again
  EXPECT_NEAR(ms(r.expected_gap()), 5, 0.1);
}

TEST(GroupArrivalRates, EachGroupHasItsOwnEstimate) {
  GroupArrivalRates g;
  g.arrived("8;", t0);
  g.arrived("16;", t0 + 1ms);
  g.arrived("8;", t0 + 10ms);
  g.arrived("16;", t0 + 3ms);
  EXPECT_DOUBLE_EQ(ms(g.expected_gap("8;")), 10);
  EXPECT_DOUBLE_EQ(ms(g.expected_gap("16;")), 2);
  EXPECT_FALSE(g.expected_gap("32;"));
}

TEST(GroupArrivalRates, HoldOnlyHoldsTheNamedGroup) {
  GroupArrivalRates g;
  for (auto t : {t0, t0 + 10ms}) g.arrived("a", t), g.arrived("b", t);
  const std::string a = "a";
  g.hold_only(&a, t0 + 10ms);
  g.hold_only(nullptr, t0 + 14ms);  // a held 4 ms, b never
  EXPECT_DOUBLE_EQ(ms(g.expected_gap("a")), 14);
  EXPECT_DOUBLE_EQ(ms(g.expected_gap("b")), 10);
}

TEST(GroupArrivalRates, KeepsAtMostKMaxGroupsDroppingTheStalest) {
  GroupArrivalRates g;
  for (size_t i = 0; i <= GroupArrivalRates::kMaxGroups; ++i) {
    std::string name = std::to_string(i);
    g.arrived(name, t0 + i * 1ms);
    g.arrived(name, t0 + i * 1ms + 2ms);
    if (i == 0) g.arrived("0", t0 + 100ms);  // group 0 arrived last of all: it stays
  }
  EXPECT_EQ(g.size(), GroupArrivalRates::kMaxGroups);
  EXPECT_TRUE(g.expected_gap("0"));
  EXPECT_FALSE(g.expected_gap("1")) << "group 1's last arrival was the oldest";
  EXPECT_TRUE(g.expected_gap(std::to_string(GroupArrivalRates::kMaxGroups)));
}

}  // namespace
}  // namespace fusor::serve
