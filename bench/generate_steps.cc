// generate_steps: fusor's side of bench/compare-generate (issue #16). Runs a decoder export's
// prefill and decode cases on a DecoderBatch and prints one JSON line per case.
//   generate_steps MODEL [--threads N] [--repeats N] [--decode-steps N] [--decode8-steps N] [--cases a,b]
// Cases (all but decode-16 by default):
//   prefill-128, prefill-512   one step of P ids on a fresh sequence, max_step_tokens = 512 (one plan)
//   prefill-512-chunk128       the same with the default max_step_tokens (128-token chunks)
//   decode-1                   a 64-token prompt, then --decode-steps steps of one token (greedy)
//   decode-8                   8 sequences with prompts of 8, 24, ..., 120 tokens (each at its own
//                              position), then --decode8-steps steps of all 8 together (greedy)
//   decode-16                  16 sequences with prompts of 8, 16, ..., 128 tokens, then
//                              --decode8-steps steps of all 16 together (only when --cases names it)
// Every case runs once untimed first (plans are built lazily per token count), then --repeats
// timed runs; tokens_per_s is their median. Only the timed part counts: the prefill step itself,
// or the decode steps after an untimed prefill (argmax included, as on ONNX Runtime's side).
// Prompt ids come from prompt_ids() below; bench/compare-generate draws the same ones.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fusor/decoder.h"
#include "fusor/engine.h"
#include "fusor/error.h"
#include "fusor/threads.h"

using namespace fusor;

namespace {

// splitmix64 over `seed`, mapped to [3, vocab): ids 0-2 are pad/bos/eos in the Llama exports.
std::vector<TokenId> prompt_ids(uint64_t seed, int64_t length, int64_t vocab) {
  std::vector<TokenId> ids;
  uint64_t state = seed;
  for (int64_t i = 0; i < length; ++i) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    ids.push_back(static_cast<TokenId>(3 + z % static_cast<uint64_t>(vocab - 3)));
  }
  return ids;
}

// The first maximum, as numpy's argmax.
TokenId argmax(std::span<const float> logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// One timed run: tokens processed in the timed part, its seconds, the greedy tokens per sequence.
struct Run {
  int64_t tokens = 0;
  double seconds = 0;
  std::vector<std::vector<TokenId>> greedy;
};

Run prefill(DecoderBatch& batch, int64_t length, int64_t vocab) {
  const std::vector<TokenId> ids = prompt_ids(static_cast<uint64_t>(length), length, vocab);
  const DecoderBatch::SequenceId s = batch.add();
  const DecoderBatch::Feed feed{s, ids};
  const auto t0 = Clock::now();
  batch.step({&feed, 1});
  Run run{length, since(t0), {}};
  batch.remove(s);
  return run;
}

// Prefills each prompt (untimed, one step for all), then `steps` greedy steps of every sequence
// together. greedy[i] = the prefill's argmax, then each step's.
Run decode(DecoderBatch& batch, const std::vector<std::vector<TokenId>>& prompts, int64_t steps) {
  std::vector<DecoderBatch::SequenceId> seqs;
  std::vector<DecoderBatch::Feed> feeds;
  for (const auto& p : prompts) {
    seqs.push_back(batch.add());
    feeds.push_back({seqs.back(), p});
  }
  Run run;
  run.greedy.resize(prompts.size());
  std::vector<TokenId> next(prompts.size());
  auto take = [&](std::span<const std::span<const float>> logits) {
    for (size_t i = 0; i < logits.size(); ++i) {
      next[i] = argmax(logits[i]);
      run.greedy[i].push_back(next[i]);
    }
  };
  take(batch.step(feeds));
  const auto t0 = Clock::now();
  for (int64_t k = 0; k < steps; ++k) {
    for (size_t i = 0; i < feeds.size(); ++i) feeds[i].ids = {&next[i], 1};
    take(batch.step(feeds));
  }
  run.seconds = since(t0);
  run.tokens = steps * static_cast<int64_t>(prompts.size());
  for (auto s : seqs) batch.remove(s);
  return run;
}

std::string json_ids(const std::vector<std::vector<TokenId>>& greedy) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < greedy.size(); ++i) {
    o << (i ? ",[" : "[");
    for (size_t j = 0; j < greedy[i].size(); ++j) o << (j ? "," : "") << greedy[i][j];
    o << "]";
  }
  o << "]";
  return o.str();
}

// Warm-up, then `repeats` timed runs; prints the case's JSON line.
void measure(const std::string& name, int repeats, const DecoderBatch& batch, const std::function<Run()>& once) {
  const Run warm = once();
  const size_t plans = batch.plans_built();
  std::vector<double> rates;
  for (int r = 0; r < repeats; ++r) {
    const Run run = once();
    if (run.greedy != warm.greedy) throw Error(name + ": greedy tokens changed between runs", ErrorKind::Runtime);
    rates.push_back(static_cast<double>(run.tokens) / run.seconds);
  }
  std::ostringstream o;
  o << "{\"case\":\"" << name << "\",\"tokens\":" << warm.tokens << ",\"tokens_per_s\":" << median(rates)
    << ",\"runs_tokens_per_s\":[";
  for (size_t i = 0; i < rates.size(); ++i) o << (i ? "," : "") << rates[i];
  // Planning is the warm-up's: a plan built while timing would make the number meaningless.
  if (batch.plans_built() != plans) throw Error(name + ": a plan was built during the timed runs", ErrorKind::Runtime);
  o << "],\"plans_built\":" << plans << ",\"plan_seconds\":" << batch.plan_seconds();
  if (!warm.greedy.empty()) o << ",\"greedy\":" << json_ids(warm.greedy);
  o << "}";
  std::printf("%s\n", o.str().c_str());
  std::fflush(stdout);
}

int positive(const char* flag, const char* value) {
  const int n = std::atoi(value);
  if (n <= 0) throw Error(std::string(flag) + " wants a positive integer, got '" + value + "'", ErrorKind::InvalidArgument);
  return n;
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: generate_steps MODEL [--threads N] [--repeats N] [--decode-steps N] "
                 "[--decode8-steps N] [--cases a,b]\n");
    return 2;
  }
  int threads = 2, repeats = 5, decode_steps = 64, decode8_steps = 32;
  std::set<std::string> cases = {"prefill-128", "prefill-512", "prefill-512-chunk128", "decode-1", "decode-8"};
  const std::set<std::string> known = [&] {  // decode-16 only when asked for
    auto all = cases;
    all.insert("decode-16");
    return all;
  }();
  for (int i = 2; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw Error(flag + " wants a value", ErrorKind::InvalidArgument);
    const char* value = argv[++i];
    if (flag == "--threads") threads = positive("--threads", value);
    else if (flag == "--repeats") repeats = positive("--repeats", value);
    else if (flag == "--decode-steps") decode_steps = positive("--decode-steps", value);
    else if (flag == "--decode8-steps") decode8_steps = positive("--decode8-steps", value);
    else if (flag == "--cases") {
      std::set<std::string> picked;
      std::stringstream list(value);
      for (std::string c; std::getline(list, c, ',');)
        if (!c.empty()) {
          if (!known.count(c)) throw Error("unknown case '" + c + "'", ErrorKind::InvalidArgument);
          picked.insert(c);
        }
      cases = picked;
    } else throw Error("unknown flag " + flag, ErrorKind::InvalidArgument);
  }
  set_compute_threads(threads);
  const DecoderSpec spec = DecoderSpec::load(argv[1]);
  const int64_t vocab = spec.vocab_size;
  if (vocab <= 3) throw Error("the model's logits declare no vocabulary size", ErrorKind::InvalidArgument);
  const Engine engine = Engine::load(spec.model_file);
  DecoderBatchOptions one_plan;
  one_plan.max_step_tokens = 512;  // a 512-token prompt runs as one plan
  DecoderBatch whole(engine, spec, {}, one_plan);
  DecoderBatch chunked(engine, spec);  // the defaults, as fusor generate runs
  auto fits = [&](int64_t tokens) { return spec.context_length == 0 || tokens <= spec.context_length; };

  for (int64_t p : {128, 512})
    if (cases.count("prefill-" + std::to_string(p)) && fits(p))
      measure("prefill-" + std::to_string(p), repeats, whole, [&] { return prefill(whole, p, vocab); });
  if (cases.count("prefill-512-chunk128") && fits(512))
    measure("prefill-512-chunk128", repeats, chunked, [&] { return prefill(chunked, 512, vocab); });
  if (cases.count("decode-1")) {
    const std::vector<std::vector<TokenId>> prompts = {prompt_ids(1000, 64, vocab)};
    measure("decode-1", repeats, chunked, [&] { return decode(chunked, prompts, decode_steps); });
  }
  for (int n : {8, 16}) {
    const std::string name = "decode-" + std::to_string(n);
    if (!cases.count(name)) continue;
    std::vector<std::vector<TokenId>> prompts;
    for (int i = 0; i < n; ++i) prompts.push_back(prompt_ids(2000 + i, 8 + 128 / n * i, vocab));
    measure(name, repeats, chunked, [&] { return decode(chunked, prompts, decode8_steps); });
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "generate_steps: %s\n", e.what());
  return 1;
}
