// How soon the next request of one batching group is expected, for the adaptive batch window
// (serve/batch_window.h). A few numbers per group, updated under the batcher's lock; every time
// is passed in, never read from a clock, so tests drive it with explicit time points.
//
// Why not just the mean gap between arrivals: arrivals depend on the batcher. A closed-loop
// client (one request at a time) sends its next request only once the previous one is answered,
// so while the batcher holds that request back for a batch-mate none comes, however short the
// usual gap. The estimate is therefore the rate seen *while a batch of the group was held back
// at an idle context*: arrivals during holds over the time held (a Poisson rate with its
// exposure). The mean gap between all arrivals counts as one more arrival of evidence, so a group
// that was never held is judged by its gaps. Evidence fades by 1/kMemory at each arrival, so the
// estimate follows the group's recent ~kMemory arrivals.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fusor::serve {

class ArrivalRate {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr double kMemory = 64;    // arrivals over which held-time evidence fades
  static constexpr double kGapWeight = 8;  // the mean gap is an average over ~8 recent gaps
  static constexpr double kSilenceMemory = 32;

  // A request of this group arrived at `t` (times never go backwards).
  void arrived(Clock::time_point t);
  // From `t` on, a batch of this group is (true) or is no longer (false) held back at an idle
  // context, waiting for a batch-mate. Repeating the current state changes nothing.
  void hold(Clock::time_point t, bool held);
  // The expected time to the next arrival while held; none until two arrivals gave a gap.
  std::optional<Clock::duration> expected_gap() const;
  std::optional<Clock::time_point> last_arrival() const { return last_; }
  // When the current hold began; none while not held.
  std::optional<Clock::time_point> hold_began() const { return hold_began_; }
  // How long a held batch's group may stay silent before no arrival is coming: twice the longest
  // silence that an arrival recently ended while held (its max fades by 1/kSilenceMemory per
  // arrival, so one client descheduled once does not hold batches for long), and at least half
  // the expected gap.
  // Poisson arrivals reach that rarely; closed-loop clients fewer than a batch, all waiting in
  // it, reach it right after their burst. None until an arrival came during a hold.
  std::optional<Clock::duration> silence_limit() const;

 private:
  std::optional<Clock::time_point> last_, held_since_, hold_began_;
  std::optional<double> mean_gap_ns_;
  double held_ns_ = 0, held_arrivals_ = 0;  // the fading evidence of holds
  double held_silence_max_ns_ = 0;          // 0: no arrival during a hold yet
};

// The ArrivalRate of each group of one traffic class. At most kMaxGroups are kept: a new group
// replaces the one whose last arrival is oldest (it starts again with no estimate).
class GroupArrivalRates {
 public:
  using Clock = ArrivalRate::Clock;
  static constexpr size_t kMaxGroups = 16;

  void arrived(const std::string& group, Clock::time_point t);
  // The group's estimator; null for a group not (or no longer) kept.
  const ArrivalRate* find(const std::string& group) const;
  // The group's estimate; none for a group not kept.
  std::optional<Clock::duration> expected_gap(const std::string& group) const;
  // From `t` on, only `group` is held (none when null): ArrivalRate::hold for every kept group.
  void hold_only(const std::string* group, Clock::time_point t);
  size_t size() const { return rates_.size(); }

 private:
  std::vector<std::pair<std::string, ArrivalRate>> rates_;
};

}  // namespace fusor::serve
