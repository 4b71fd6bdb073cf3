#include "serve/arrival_rate.h"

#include <algorithm>

namespace fusor::serve {

namespace {
double ns(ArrivalRate::Clock::duration d) { return std::max(0.0, static_cast<double>(std::chrono::nanoseconds(d).count())); }
}  // namespace

void ArrivalRate::arrived(Clock::time_point t) {
  held_ns_ *= 1 - 1 / kMemory;
  held_arrivals_ *= 1 - 1 / kMemory;
  held_silence_max_ns_ *= 1 - 1 / kSilenceMemory;
  if (held_since_) {  // an arrival during a hold: its time held so far, and one arrival
    held_silence_max_ns_ = std::max(held_silence_max_ns_, ns(t - std::max(*held_since_, last_.value_or(*held_since_))));
    held_ns_ += ns(t - *held_since_);
    held_arrivals_ += 1;
    held_since_ = t;
  }
  if (last_) {
    double gap = ns(t - *last_);
    mean_gap_ns_ = mean_gap_ns_ ? *mean_gap_ns_ + (gap - *mean_gap_ns_) / kGapWeight : gap;
  }
  last_ = t;
}

void ArrivalRate::hold(Clock::time_point t, bool held) {
  if (held && !held_since_) held_since_ = hold_began_ = t;
  if (!held && held_since_) {
    held_ns_ += ns(t - *held_since_);
    held_since_.reset();
    hold_began_.reset();
  }
}

std::optional<ArrivalRate::Clock::duration> ArrivalRate::expected_gap() const {
  if (!mean_gap_ns_) return std::nullopt;
  double gap = (held_ns_ + *mean_gap_ns_) / (held_arrivals_ + 1);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::nano>(gap));
}

std::optional<ArrivalRate::Clock::duration> ArrivalRate::silence_limit() const {
  if (held_silence_max_ns_ <= 0) return std::nullopt;
  // At least half the expected gap: batches that all close before their next arrival record no
  // silence, and the max would fade to nothing (every batch then one request).
  const double floor_ns = expected_gap() ? 0.5 * ns(*expected_gap()) : 0;
  return std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::nano>(std::max(2 * held_silence_max_ns_, floor_ns)));
}

void GroupArrivalRates::arrived(const std::string& group, Clock::time_point t) {
  auto it = std::find_if(rates_.begin(), rates_.end(), [&](const auto& r) { return r.first == group; });
  if (it == rates_.end()) {
    if (rates_.size() >= kMaxGroups)
      rates_.erase(std::min_element(rates_.begin(), rates_.end(), [](const auto& a, const auto& b) {
        return a.second.last_arrival() < b.second.last_arrival();
      }));
    rates_.emplace_back(group, ArrivalRate{});
    it = std::prev(rates_.end());
  }
  it->second.arrived(t);
}

const ArrivalRate* GroupArrivalRates::find(const std::string& group) const {
  for (const auto& [name, rate] : rates_)
    if (name == group) return &rate;
  return nullptr;
}

std::optional<GroupArrivalRates::Clock::duration> GroupArrivalRates::expected_gap(const std::string& group) const {
  const ArrivalRate* rate = find(group);
  return rate ? rate->expected_gap() : std::nullopt;
}

void GroupArrivalRates::hold_only(const std::string* group, Clock::time_point t) {
  for (auto& [name, rate] : rates_) rate.hold(t, group && name == *group);
}

}  // namespace fusor::serve
