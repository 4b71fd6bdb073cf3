// packed_vs_padded: the engine-level cost of padding, without a server. The same requests run
// packed (one PackedSession step) and padded (one Session over [rows, longest], or each length
// bucket in its own session), alternating in one process, so the ratio is fair on a noisy machine.
//   packed_vs_padded MODEL [rounds=5]   (threads: OMP_NUM_THREADS / fusor's default)
// Cases: mixed lengths uniform over 8..128 (16 requests) against 16-token buckets and against
// padding to the longest; fixed lengths (8 x 32, 16 x 128, 1 x 32) against the plain padded batch,
// where there is no padding to remove. Prints real tokens/s per variant and packed's ratio.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "fusor/engine.h"
#include "fusor/packed.h"

using namespace fusor;
using Feeds = std::map<std::string, Tensor>;

namespace {

Feeds request(const Engine& engine, int64_t rows, int64_t len, uint64_t seed) {
  std::map<std::string, Dims> dims;
  for (const TensorInfo& in : engine.inputs()) dims[in.name] = {rows, len};
  return engine.sample_inputs(dims, seed);
}

// Stacks requests along rows, each padded to `len` (ids 0, mask 0).
Feeds stack(const std::vector<Feeds>& reqs, int64_t len) {
  Feeds out;
  int64_t rows = 0;
  for (const Feeds& r : reqs) rows += r.begin()->second.dim(0);
  for (const auto& [name, t0] : reqs.front()) {
    Tensor t(t0.dtype(), {rows, len});
    int64_t row = 0;
    for (const Feeds& r : reqs) {
      const Tensor& src = r.at(name);
      for (int64_t i = 0; i < src.dim(0); ++i, ++row)
        for (int64_t j = 0; j < src.dim(1); ++j) t.data<int64_t>()[row * len + j] = src.data<int64_t>()[i * src.dim(1) + j];
    }
    out[name] = t;
  }
  return out;
}

double seconds(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct Variant {
  std::string name;
  std::function<void()> run;
  double total = 0;
};

// Runs every variant once per round, in rotating order, after one untimed warm-up each.
void compare(const std::string& label, int64_t tokens, std::vector<Variant> vs, int rounds) {
  for (auto& v : vs) v.run();
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < vs.size(); ++i) {
      Variant& v = vs[(i + static_cast<size_t>(r)) % vs.size()];
      v.total += seconds(v.run);
    }
  std::printf("%s (%lld real tokens)\n", label.c_str(), static_cast<long long>(tokens));
  for (const Variant& v : vs)
    std::printf("  %-22s %9.0f tokens/s   packed x%.3f\n", v.name.c_str(), tokens * rounds / v.total,
                v.total / vs.front().total);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: packed_vs_padded MODEL [rounds]\n");
    return 2;
  }
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 5;
  Engine engine = Engine::load(argv[1]);
  auto dims_of = [&](int64_t rows, int64_t len) {
    std::map<std::string, Dims> d;
    for (const TensorInfo& in : engine.inputs()) d[in.name] = {rows, len};
    return d;
  };

  {  // mixed lengths 8..128, 16 requests
    std::mt19937_64 rng(0);
    std::vector<Feeds> reqs;
    int64_t tokens = 0, longest = 0;
    std::map<int64_t, std::vector<Feeds>> buckets;
    for (int i = 0; i < 16; ++i) {
      const int64_t len = 8 + static_cast<int64_t>(rng() % 121);
      reqs.push_back(request(engine, 1, len, static_cast<uint64_t>(i)));
      tokens += len;
      longest = std::max(longest, len);
      buckets[(len + 15) / 16 * 16].push_back(reqs.back());
    }
    PackedSession packed = packed_session(engine, (tokens + 15) / 16 * 16);
    Feeds padded_feeds = stack(reqs, longest);
    Session padded = engine.session(dims_of(16, longest));
    std::vector<std::pair<Session, Feeds>> per_bucket;
    for (const auto& [len, group] : buckets)
      per_bucket.emplace_back(engine.session(dims_of(static_cast<int64_t>(group.size()), len)), stack(group, len));
    compare("mixed lengths 8..128, 16 requests", tokens,
            {{"packed", [&] { packed.run(reqs); }},
             {"16-token buckets", [&] { for (auto& [s, f] : per_bucket) s.run(f); }},
             {"pad to longest", [&] { padded.run(padded_feeds); }}},
            rounds);
  }
  for (auto [rows, len] : {std::pair<int64_t, int64_t>{1, 32}, {8, 32}, {16, 128}}) {  // fixed lengths
    std::vector<Feeds> reqs;
    for (int64_t i = 0; i < rows; ++i) reqs.push_back(request(engine, 1, len, static_cast<uint64_t>(i)));
    PackedSession packed = packed_session(engine, rows * len);
    Session padded = engine.session(dims_of(rows, len));
    Feeds feeds = stack(reqs, len);
    compare("fixed length " + std::to_string(len) + ", " + std::to_string(rows) + " requests", rows * len,
            {{"packed", [&] { packed.run(reqs); }}, {"padded", [&] { padded.run(feeds); }}}, rounds);
  }
  return 0;
}
