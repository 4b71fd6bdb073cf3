// fusor tune's token-budget sweep for models that pack (tune/token_sweep.h): which budgets it
// tries, which token counts it times, the token batcher's model that ranks the budgets, and the
// record fields that carry the choice.
#include <gtest/gtest.h>

#include "fusor/error.h"
#include "fusor/tune.h"
#include "fusor/tuned_record.h"
#include "serve/batch_assembly.h"
#include "tune/arrivals.h"
#include "tune/token_sweep.h"

namespace fusor::tune {
namespace {

TrafficClass token_class(double window_ms, int64_t max_batch, int64_t budget, bool adaptive = false) {
  TrafficClass c;
  c.batch_window_ms = window_ms;
  c.max_batch = max_batch;
  c.max_batch_tokens = budget;
  c.adaptive_window = adaptive;
  return c;
}

// A packed step: a fixed cost plus a cost per token, so larger steps are cheaper per token.
ServiceTimes per_token(double fixed_ms, double ms_per_token) {
  ServiceTimes t;
  for (int64_t tokens : {16, 64, 256, 1024, 4096}) t.ms_by_rows[tokens] = fixed_ms + ms_per_token * static_cast<double>(tokens);
  return t;
}

TEST(TokenSweep, LengthsParse) {
  EXPECT_EQ(parse_lengths("8-128").min, 8);
  EXPECT_EQ(parse_lengths("8-128").max, 128);
  EXPECT_EQ(parse_lengths("32").min, 32);
  EXPECT_EQ(parse_lengths("32").max, 32);
  for (const char* bad : {"", "-", "8-", "-8", "0-4", "9-8", "a-b", "8-12x", "8--9"})
    EXPECT_THROW(parse_lengths(bad), Error) << bad;
}

TEST(TokenSweep, BudgetsBeyondWhatRowsCanHoldCollapseToOne) {
  // 32 rows of at most 128 tokens: 4096 tokens at most, so 4096 and 8192 behave alike.
  EXPECT_EQ(effective_token_budgets({8192, 256, 4096, 1024, 256}, 32, 128), (std::vector<int64_t>{256, 1024, 4096}));
  // 4 rows of 8 tokens: every budget from 256 holds all 4 rows; the smallest stands for them.
  EXPECT_EQ(effective_token_budgets({256, 512, 1024, 2048, 4096}, 4, 8), (std::vector<int64_t>{256}));
  EXPECT_EQ(effective_token_budgets({0, -5, 64}, 8, 128), (std::vector<int64_t>{64}));
}

TEST(TokenSweep, TimedPointsArePlanCapacitiesUpToTheMost) {
  const std::vector<int64_t> points = packed_time_points(4096, 16);
  EXPECT_EQ(points.front(), 16);
  EXPECT_EQ(points.back(), 4096);
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(serve::packed_capacity(points[i], 16), points[i]) << points[i];  // a plan the server builds
    if (i) EXPECT_GT(points[i], points[i - 1]);
  }
  EXPECT_EQ(packed_time_points(32, 16), (std::vector<int64_t>{16, 32}));
  EXPECT_EQ(packed_time_points(5, 16), (std::vector<int64_t>{16}));
}

TEST(TokenSweep, ALoneRequestRunsInItsOwnPlanCapacity) {
  const ServiceTimes t = per_token(2, 0.01);
  const std::vector<int64_t> tokens = {40};  // plan capacity 48
  SimResult s = simulate_token_batcher(token_class(0, 32, 1024), 1, t, 16, poisson_arrivals(1, 200, 1), tokens);
  EXPECT_NEAR(s.p50_ms, t.at(48), 1e-6);
  EXPECT_NEAR(s.mean_batch, 1.0, 0.02);
}

TEST(TokenSweep, BatchesCloseOnTheBudgetOrTheRowLimit) {
  const ServiceTimes t = per_token(2, 0.01);
  const std::vector<int64_t> tokens = {64};
  auto busy = poisson_arrivals(5000, 4, 2);  // far beyond capacity: every batch fills
  // 256 tokens of 64-token requests: 4 per batch, whatever the row limit above it.
  EXPECT_NEAR(simulate_token_batcher(token_class(50, 32, 256), 1, t, 16, busy, tokens).mean_batch, 4, 0.05);
  // The row limit closes first when it is tighter than the budget.
  EXPECT_NEAR(simulate_token_batcher(token_class(50, 2, 4096), 1, t, 16, busy, tokens).mean_batch, 2, 0.05);
  // A request larger than the budget runs alone rather than never.
  SimResult big = simulate_token_batcher(token_class(50, 32, 32), 1, t, 16, poisson_arrivals(100, 2, 3), tokens);
  EXPECT_NEAR(big.mean_batch, 1, 1e-9);
}

TEST(TokenSweep, ALargerBudgetPricesMoreCapacityUnlessTheSloCannotWaitForIt) {
  // Mixed lengths 8-128; a step costs 4 ms plus 0.02 ms per token (a large fixed cost: batching pays).
  const ServiceTimes t = per_token(4, 0.02);
  const Lengths mixed{8, 128};
  const double small = simulated_token_capacity(token_class(0, 64, 256, true), 1, t, 16, mixed, 200);
  const double large = simulated_token_capacity(token_class(0, 64, 2048, true), 1, t, 16, mixed, 200);
  EXPECT_GT(small, 0);
  EXPECT_GT(large, 1.2 * small);
  // With a fixed 20 ms window under a 30 ms p99, a batch must fill before the window ends and
  // then run quickly: 256 tokens (about 4 requests, a 9 ms step) do at a moderate rate, while
  // 2048 tokens take 30 requests to fill and a 45 ms step, which no rate meets.
  const double tight_small = simulated_token_capacity(token_class(20, 64, 256), 1, t, 16, mixed, 30);
  const double tight_large = simulated_token_capacity(token_class(20, 64, 2048), 1, t, 16, mixed, 30);
  EXPECT_GT(tight_small, 50);
  EXPECT_GT(tight_small, tight_large);
}

TEST(TokenSweep, TheRecordKeepsTheBudgetAndTheLengths) {
  TunedRecord r;
  r.model = "m.onnx";
  r.model_hash = "1";
  r.machine = "x";
  r.request = {{"input_ids", {1, 128}}};
  r.min_length = 8;
  r.max_length = 128;
  r.packed = true;
  ClassRecord c;
  c.name = "interactive";
  c.slo = {20, false};
  c.chosen = {2, 32, 1, 1024};
  Candidate k;
  k.setting = c.chosen;
  c.candidates = {k};
  r.classes = {c};
  Config config;
  config.serve.classes = {{"interactive", {}}};
  config.serve.classes["interactive"].max_batch_tokens = 1024;
  config.serve.default_class = "interactive";
  const std::string text = tuned_yaml(config, r, "t");
  const TunedRecord back = parse_tuned_record(text, "t.yaml");
  EXPECT_EQ(back.classes.at(0).chosen, r.classes[0].chosen);
  EXPECT_EQ(back.classes.at(0).chosen.max_batch_tokens, 1024);
  EXPECT_EQ(back.min_length, 8);
  EXPECT_EQ(back.max_length, 128);
  EXPECT_TRUE(back.packed);
  EXPECT_EQ(parse_config(text, "t.yaml").serve.classes.at("interactive").max_batch_tokens, 1024);
  // A record of a model that does not pack writes neither field, and reads back without them.
  r.packed = false;
  r.min_length = r.max_length = 0;
  r.classes[0].chosen = r.classes[0].candidates[0].setting = {2, 4, 1};
  const std::string plain = tuned_yaml(config, r, "t");
  const std::string plain_record = plain.substr(plain.find("\ntuned:"));
  EXPECT_EQ(plain_record.find("max_batch_tokens"), std::string::npos);
  EXPECT_EQ(plain_record.find("lengths"), std::string::npos);
  EXPECT_EQ(parse_tuned_record(plain, "t.yaml").classes.at(0).chosen.max_batch_tokens, 0);
  // A bad budget or length range is a one-line error.
  std::string bad = text;
  bad.replace(bad.find("max_batch_tokens: 1024", bad.find("\ntuned:")), 22, "max_batch_tokens: 0");
  EXPECT_THROW(parse_tuned_record(bad, "t.yaml"), Error);
}

}  // namespace
}  // namespace fusor::tune
