// The tuner's fusion choice per batch size: the rule on hand-made per-round timings (noise
// keeps the fused plan, a consistent win switches, an outlier round cannot), the matrix built
// from it, and the alternated rounds' shape on a tiny model (counts, not times).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>

#include "chain_model.h"
#include "fusor/engine.h"
#include "tune/fusion_matrix.h"
#include "tune/service_times.h"

namespace fusor::tune {
namespace {

// `kept` scaled round by round by `ratios`: the option's times when its ratio to `kept` is known.
std::vector<double> scaled(const std::vector<double>& kept, const std::vector<double>& ratios) {
  std::vector<double> out;
  for (size_t i = 0; i < kept.size(); ++i) out.push_back(kept[i] * ratios[i]);
  return out;
}

const std::vector<double> kKept = {10.0, 10.4, 9.8, 10.1, 10.6, 9.9, 10.2, 10.0};  // ms, 8 rounds

TEST(FusionChoice, NoisyTiesKeepTheFusedPlan) {
  // Half the rounds either way: no majority.
  RoundComparison tie = compare_rounds(kKept, scaled(kKept, {0.96, 1.04, 0.97, 1.03, 0.95, 1.02, 0.98, 1.05}));
  EXPECT_EQ(tie.rounds, 8);
  EXPECT_EQ(tie.wins, 4);
  EXPECT_FALSE(tie.clear_win());
  // A majority of small wins: 2.5% is under the 3% floor.
  RoundComparison small = compare_rounds(kKept, scaled(kKept, {0.97, 0.99, 0.95, 1.01, 0.96, 0.98, 0.94, 0.99}));
  EXPECT_EQ(small.wins, 7);
  EXPECT_NEAR(small.ratio, 0.975, 1e-9);
  EXPECT_FALSE(small.clear_win());
  // Six wins in eight and a 5% median gain, but rounds spread by 10% (MAD): within the noise.
  RoundComparison wide = compare_rounds(kKept, scaled(kKept, {0.70, 0.75, 0.85, 0.93, 0.97, 0.99, 1.05, 1.10}));
  EXPECT_EQ(wide.wins, 6);
  EXPECT_NEAR(wide.ratio, 0.95, 1e-9);
  EXPECT_NEAR(wide.noise, 0.10, 1e-9);
  EXPECT_FALSE(wide.clear_win());
}

TEST(FusionChoice, AConsistentTenPercentWinSwitches) {
  RoundComparison c = compare_rounds(kKept, scaled(kKept, {0.90, 0.89, 0.91, 0.90, 0.88, 0.92, 0.90, 0.91}));
  EXPECT_EQ(c.wins, 8);
  EXPECT_NEAR(c.ratio, 0.90, 1e-9);
  EXPECT_NEAR(c.noise, 0.01, 1e-9);
  EXPECT_TRUE(c.clear_win());
  // Six wins in eight is majority enough when the gain is clear of the noise.
  EXPECT_TRUE(compare_rounds(kKept, scaled(kKept, {0.90, 0.89, 1.01, 0.90, 0.88, 1.02, 0.90, 0.91})).clear_win());
}

TEST(FusionChoice, OneHugeOutlierRoundDoesNotSwitch) {
  // The kept plan hit a slow spell once (3x); elsewhere the option is 2% faster: the mean
  // ratio would say 10% faster, the median says 2%.
  std::vector<double> kept = kKept;
  kept[3] *= 3;
  std::vector<double> option = scaled(kKept, std::vector<double>(8, 0.98));
  RoundComparison c = compare_rounds(kept, option);
  EXPECT_EQ(c.wins, 8);
  EXPECT_NEAR(c.ratio, 0.98, 1e-9);
  EXPECT_FALSE(c.clear_win());
  // A single lucky round of the option (3x faster once, a tie elsewhere) wins one round only.
  std::vector<double> lucky = kKept;
  lucky[5] /= 3;
  EXPECT_EQ(compare_rounds(kKept, lucky).wins, 1);
  EXPECT_FALSE(compare_rounds(kKept, lucky).clear_win());
}

TEST(FusionChoice, TooFewRoundsKeepTheFusedPlan) {
  // Two rounds of a 20% win (a run stopped early) are no majority of three.
  RoundComparison c = compare_rounds({10, 10}, {8, 8});
  EXPECT_EQ(c.rounds, 2);
  EXPECT_FALSE(c.clear_win());
  EXPECT_EQ(compare_rounds({}, {}).rounds, 0);
  EXPECT_FALSE(compare_rounds({}, {}).clear_win());
  // Only rounds both ran count.
  EXPECT_EQ(compare_rounds(kKept, {9, 9, 9}).rounds, 3);
}

TEST(FusionChoice, TheMatrixKeepsAllUnlessAClearWinAndRecordsTheEvidence) {
  auto options = fusion_options(FusionConfig{});
  ASSERT_EQ(options.size(), 3u);  // all, no-attention, none
  const std::vector<double> noisy = {1.03, 0.97, 1.02, 0.98, 1.01, 0.96, 1.04, 0.99};
  const std::vector<double> clear = {0.85, 0.86, 0.84, 0.85, 0.87, 0.85, 0.86, 0.84};
  const std::vector<double> clearer = {0.80, 0.81, 0.79, 0.80, 0.82, 0.80, 0.81, 0.79};
  std::map<int64_t, RoundTimes> rounds = {
      {1, {{"all", kKept}, {"no-attention", scaled(kKept, noisy)}, {"none", scaled(kKept, noisy)}}},
      {2, {{"all", kKept}, {"no-attention", scaled(kKept, clear)}, {"none", scaled(kKept, noisy)}}},
      {4, {{"all", kKept}, {"no-attention", scaled(kKept, clear)}, {"none", scaled(kKept, clearer)}}},  // two clear: the faster
      {8, {{"all", kKept}, {"no-attention", scaled(kKept, noisy)}, {"none", scaled(kKept, noisy)}}},
      {16, {{"no-attention", kKept}, {"none", scaled(kKept, clear)}}}};  // no rounds of "all": no choice
  MatrixChoice c = choose_matrix(options, rounds, {1, 2, 4, 8, 16});
  std::vector<std::string> chosen;
  for (const auto& [rows, o] : c.per_rows) chosen.push_back(o->name);
  EXPECT_EQ(chosen, (std::vector<std::string>{"all", "no-attention", "none", "all"}));
  auto entries = c.entries();
  ASSERT_EQ(entries.size(), 4u);  // <=1 all, <=2 no-attention, <=4 none, <=8 all
  EXPECT_EQ(entries[1].max_batch, 2);
  EXPECT_FALSE(entries[1].fusion.fuse_attention);
  EXPECT_EQ(entries[3].max_batch, 8);
  // Every option's evidence per size, the chosen ones marked.
  ASSERT_EQ(c.timings.size(), 12u);
  EXPECT_EQ(std::count_if(c.timings.begin(), c.timings.end(), [](const MatrixTiming& m) { return m.chosen; }), 4);
  auto at = [&](int64_t rows, const std::string& option) {
    return *std::find_if(c.timings.begin(), c.timings.end(), [&](const MatrixTiming& m) { return m.rows == rows && m.option == option; });
  };
  const MatrixTiming kept = at(2, "all"), switched = at(2, "no-attention");
  EXPECT_EQ(kept.rounds, 8);
  EXPECT_EQ(kept.wins, 0);
  EXPECT_EQ(kept.ratio, 1);
  EXPECT_NEAR(kept.ms, 10.05, 1e-9);  // the median of kKept
  EXPECT_TRUE(switched.chosen);
  EXPECT_EQ(switched.wins, 8);
  EXPECT_NEAR(switched.ratio, 0.85, 1e-9);
  EXPECT_GT(switched.ratio_mad, 0);
  EXPECT_FALSE(at(4, "no-attention").chosen);
  // Noise everywhere: "all" everywhere, no matrix rows at all.
  for (int64_t r : {2, 4}) rounds[r] = rounds[1];
  EXPECT_TRUE(choose_matrix(options, rounds, {1, 2, 4, 8}).entries().empty());
}

TEST(FusionChoice, RoundsAlternateEveryOptionAndAStopDropsThem) {
  const Engine engine = Engine::load_bytes(chain_model());
  auto options = fusion_options(FusionConfig{});
  std::atomic<bool> stop = false;
  // No time budget: exactly the minimum rounds, the same count for every option.
  RoundTimes t = measure_rounds(engine, {{"x", {1, 4}}}, SessionOptions{}, options, 2, 1, 0, stop);
  ASSERT_EQ(t.size(), options.size());
  for (const FusionOption& o : options) {
    ASSERT_EQ(t[o.name].size(), static_cast<size_t>(kMinRounds)) << o.name;
    EXPECT_TRUE(std::all_of(t[o.name].begin(), t[o.name].end(), [](double ms) { return ms > 0; }));
  }
  stop = true;
  EXPECT_TRUE(measure_rounds(engine, {{"x", {1, 4}}}, SessionOptions{}, options, 2, 1, 0, stop).empty());
}

}  // namespace
}  // namespace fusor::tune
