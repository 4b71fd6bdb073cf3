// The generation loop's pieces without a model: the Sampler's transformers semantics (greedy
// ties, the repetition penalty applied once, top-k ties, the top-p boundary, seeded draws) and
// the TextStream's stop strings across token boundaries. Parity with transformers on real
// decoders is tests/e2e/test_generate.py's job.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <nlohmann/json.hpp>

#include "fusor/error.h"
#include "fusor/generate.h"
#include "generate/text_stream.h"

namespace fusor {
namespace {

std::vector<float> log_probs(std::initializer_list<double> probs) {
  std::vector<float> out;
  for (double p : probs) out.push_back(static_cast<float>(std::log(p)));
  return out;
}

std::map<TokenId, int> draw(SamplingOptions o, const std::vector<float>& logits, int n) {
  o.do_sample = true;
  Sampler s(o);
  std::map<TokenId, int> seen;
  for (int i = 0; i < n; ++i) ++seen[s.next(logits, {})];
  return seen;
}

TEST(Sampler, GreedyTakesTheFirstOfEqualMaxima) {
  Sampler s(SamplingOptions{});
  EXPECT_EQ(s.next(std::vector<float>{1, 3, 3, 2}, {}), 1);
}

TEST(Sampler, GreedyFindsTheFirstMaximumAnywhereInALargeVocabulary) {
  // Lengths around the eight-lane blocks, the maximum (and a tie after it) at every kind of place.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-30.f, 30.f);
  for (size_t n : {1, 7, 8, 9, 17, 8192, 8195})
    for (size_t at : {size_t{0}, n / 2, n - 1}) {
      std::vector<float> logits(n);
      for (float& x : logits) x = u(rng);
      logits[at] = 31.f;
      if (at + 5 < n) logits[at + 5] = 31.f;  // equal later: the first wins
      EXPECT_EQ(Sampler(SamplingOptions{}).next(logits, {}), static_cast<TokenId>(at)) << n << " " << at;
    }
  std::vector<float> low(8200, -std::numeric_limits<float>::infinity());
  EXPECT_EQ(Sampler(SamplingOptions{}).next(low, {}), 0);
  low[8197] = std::numeric_limits<float>::quiet_NaN();  // a NaN never wins
  low[8198] = -1.f;
  EXPECT_EQ(Sampler(SamplingOptions{}).next(low, {}), 8198);
}

TEST(Sampler, RepetitionPenaltyDividesPositiveAndMultipliesNegativeOnce) {
  SamplingOptions o;
  o.repetition_penalty = 2;
  Sampler s(o);
  // Once: 4 / 2 = 2 > 1.5 keeps id 0; twice (4 / 4 = 1) would not.
  EXPECT_EQ(s.next(std::vector<float>{4, 1.5f}, std::vector<TokenId>{0, 0}), 0);
  EXPECT_EQ(s.next(std::vector<float>{-1, -1.5f}, std::vector<TokenId>{0}), 1);  // -1 * 2 < -1.5
  EXPECT_EQ(s.next(std::vector<float>{4, 3}, std::vector<TokenId>{0}), 1);       // 2 < 3
}

TEST(Sampler, TopKKeepsTiesWithTheKth) {
  SamplingOptions o;
  o.top_k = 2;
  auto seen = draw(o, {5, 3, 3, 1}, 3000);
  EXPECT_GT(seen[1], 0);
  EXPECT_GT(seen[2], 0);
  EXPECT_EQ(seen.count(3), 0u);
}

TEST(Sampler, TopPKeepsIdsWhileTheMassAboveIsUnderP) {
  SamplingOptions o;
  o.top_p = 0.75f;  // 0.5 and 0.3 stay (0 and 0.5 above them), 0.2 goes (0.8 above it)
  auto seen = draw(o, log_probs({0.5, 0.3, 0.2}), 4000);
  EXPECT_EQ(seen.count(2), 0u);
  EXPECT_NEAR(seen[0] / 4000.0, 0.5 / 0.8, 0.04);
  o.top_p = 0.85f;
  EXPECT_GT(draw(o, log_probs({0.5, 0.3, 0.2}), 2000)[2], 0);
}

TEST(Sampler, TemperatureSharpensAndTheSeedRepeats) {
  SamplingOptions o;
  o.temperature = 0.5f;  // probabilities squared, renormalized: 0.36 / (0.36 + 0.16)
  auto seen = draw(o, log_probs({0.6, 0.4}), 4000);
  EXPECT_NEAR(seen[0] / 4000.0, 0.36 / 0.52, 0.04);
  o.seed = 11;
  EXPECT_EQ(draw(o, log_probs({0.3, 0.3, 0.4}), 50), draw(o, log_probs({0.3, 0.3, 0.4}), 50));
}

// A temperature near 0 is greedy's limit. Dividing the raw scores by 1e-40 passed float's range,
// inf - inf made every probability NaN, and the draw returned the least likely token.
TEST(Sampler, ATemperatureNearZeroDrawsTheBestToken) {
  SamplingOptions o;
  for (float t : {1e-40f, 1e-30f, std::numeric_limits<float>::min(), std::numeric_limits<float>::denorm_min()}) {
    o.temperature = t;
    EXPECT_EQ(draw(o, {2.f, 9.5f, -3.f, 9.f}, 50), (std::map<TokenId, int>{{1, 50}})) << t;
    o.top_k = 2;
    EXPECT_EQ(draw(o, {2.f, 9.5f, -3.f, 9.f}, 50), (std::map<TokenId, int>{{1, 50}})) << t << " top-k";
    o.top_k = 0;
  }
}

// A score of +inf (a model's, or a penalty near float's smallest dividing one up) is the best:
// inf - inf made it NaN, and the draw returned ids that were not among the best.
TEST(Sampler, AnInfiniteScoreIsTheBest) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  SamplingOptions o;
  EXPECT_EQ(draw(o, {2.f, inf, -3.f, 9.f}, 50), (std::map<TokenId, int>{{1, 50}}));
  o.top_p = 0.9f;
  EXPECT_EQ(draw(o, {2.f, inf, -3.f, 9.f}, 50), (std::map<TokenId, int>{{1, 50}}));
}

TEST(Sampler, OutOfRangeOptionsAreErrors) {
  auto bad = [](auto set) {
    SamplingOptions o;
    set(o);
    EXPECT_THROW(Sampler{o}, Error);
  };
  bad([](SamplingOptions& o) { o.temperature = 0; });
  bad([](SamplingOptions& o) { o.temperature = NAN; });
  bad([](SamplingOptions& o) { o.top_k = -1; });
  bad([](SamplingOptions& o) { o.top_p = 0; });
  bad([](SamplingOptions& o) { o.top_p = 1.5f; });
  bad([](SamplingOptions& o) { o.repetition_penalty = 0; });
}

// transformers' rule over generation_config.json: a knob given wins; greedy unless a sampling knob
// is given or the config says do_sample; a temperature of 0 is greedy; the penalty applies always.
TEST(SamplingDefaults, KnobsWinAndTheConfigsDoSampleDecidesWhenNoneIsGiven) {
  const GenerationDefaults sample{.do_sample = true, .temperature = 0.6, .top_p = 0.9, .repetition_penalty = 1.1, .top_k = 20};
  SamplingOptions o = sampling_with_defaults({}, sample, 7);
  EXPECT_TRUE(o.do_sample);
  EXPECT_FLOAT_EQ(o.temperature, 0.6f);
  EXPECT_FLOAT_EQ(o.top_p, 0.9f);
  EXPECT_EQ(o.top_k, 20);
  EXPECT_FLOAT_EQ(o.repetition_penalty, 1.1f);
  EXPECT_EQ(o.seed, 7u);
  o = sampling_with_defaults({.temperature = 0.0}, sample, 7);
  EXPECT_FALSE(o.do_sample);
  EXPECT_FLOAT_EQ(o.repetition_penalty, 1.1f);
  o = sampling_with_defaults({.temperature = 1.5, .top_p = 1.0, .repetition_penalty = 1.0, .top_k = 0}, sample, 7);
  EXPECT_TRUE(o.do_sample);
  EXPECT_FLOAT_EQ(o.temperature, 1.5f);
  EXPECT_FLOAT_EQ(o.top_p, 1.0f);
  EXPECT_EQ(o.top_k, 0);
  EXPECT_FLOAT_EQ(o.repetition_penalty, 1.0f);

  const GenerationDefaults unsaid{.temperature = 0.6};  // no do_sample: greedy, until a knob asks
  EXPECT_FALSE(sampling_with_defaults({}, unsaid, 0).do_sample);
  o = sampling_with_defaults({.top_k = 5}, unsaid, 0);
  EXPECT_TRUE(o.do_sample);
  EXPECT_FLOAT_EQ(o.temperature, 0.6f);
  EXPECT_FALSE(sampling_with_defaults({}, {.do_sample = true, .temperature = 0.0}, 0).do_sample);
  o = sampling_with_defaults({}, {}, 0);
  EXPECT_FALSE(o.do_sample);
  EXPECT_NO_THROW(o.validate());
}

// vLLM's rule: the prompt and the generated tokens together never exceed the context.
TEST(ContextRoom, APromptThatFillsTheContextLeavesNone) {
  EXPECT_EQ(context_room(1, 512), 511);
  EXPECT_EQ(context_room(511, 512), 1);
  EXPECT_EQ(context_room(512, 512), 0);
  EXPECT_EQ(context_room(600, 512), 0);
  EXPECT_EQ(context_room(600, 0), std::numeric_limits<int64_t>::max());  // unknown: unbounded
  EXPECT_NO_THROW(check_prompt_fits(511, 512));
  EXPECT_THROW(check_prompt_fits(512, 512), Error);
  EXPECT_NO_THROW(check_prompt_fits(600, 0));
}

// A byte-level tokenizer whose ids are the bytes themselves (GPT-2's stand-in characters).
Tokenizer bytes_tokenizer() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) {
    int code = b, n = 0;
    auto printable = [](int c) { return (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255); };
    if (!printable(b)) {
      for (int c = 0; c < b; ++c) n += !printable(c);
      code = 256 + n;
    }
    std::string s;
    if (code < 0x80) s.push_back(char(code));
    else s += {char(0xC0 | (code >> 6)), char(0x80 | (code & 0x3F))};
    vocab[s] = b;
  }
  nlohmann::json j = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", nlohmann::json::array()}}},
                      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                      {"decoder", {{"type", "ByteLevel"}}}};
  return Tokenizer::from_json(j.dump(), "bytes.json");
}

std::vector<std::string> pieces(TextStream& stream, const std::string& bytes) {
  std::vector<std::string> out;
  for (unsigned char c : bytes) out.push_back(stream.push(c).text);
  return out;
}

TEST(TextStream, HoldsBackTheStartOfAStopStringUntilItCompletes) {
  Tokenizer t = bytes_tokenizer();
  TextStream s(t, true, {"cde"});
  EXPECT_EQ(pieces(s, "abcd"), (std::vector<std::string>{"a", "b", "", ""}));
  TextStream::Piece last = s.push('e');
  EXPECT_TRUE(last.stopped);
  EXPECT_EQ(last.text, "");
  EXPECT_EQ(s.text(), "ab");
  EXPECT_EQ(s.push('f').text, "");  // nothing after a stop
}

TEST(TextStream, ReleasesWhatTurnsOutNotToBeAStop) {
  Tokenizer t = bytes_tokenizer();
  TextStream s(t, true, {"cde", "xy"});
  // "x" may start "xy", then "c" may start "cde": each waits for the next byte.
  EXPECT_EQ(pieces(s, "acdxcx"), (std::vector<std::string>{"a", "", "", "cd", "x", "c"}));
  EXPECT_EQ(s.finish().text, "x");  // the end: the held "x" never became a stop string
  EXPECT_EQ(s.text(), "acdxcx");
}

TEST(TextStream, CutsBeforeAStopInsideOnePieceAndKeepsCharactersWhole) {
  Tokenizer t = bytes_tokenizer();
  TextStream s(t, true, {"é!"});
  // "é" is two bytes: the first alone shows nothing, the second completes it (held: it may start "é!").
  EXPECT_EQ(pieces(s, "a\xC3\xA9"), (std::vector<std::string>{"a", "", ""}));
  TextStream::Piece p = s.push('!');
  EXPECT_TRUE(p.stopped);
  EXPECT_EQ(s.text(), "a");
  EXPECT_THROW(TextStream(t, true, {""}), Error);
}

}  // namespace
}  // namespace fusor
