#include "tune/token_sweep.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <deque>
#include <exception>
#include <thread>

#include "fusor/error.h"
#include "fusor/packed.h"
#include "kernels/cpu/thread_pool.h"
#include "serve/batch_assembly.h"
#include "serve/packed_cache.h"
#include "tune/arrivals.h"
#include "tune/open_loop.h"

namespace fusor::tune {

Lengths parse_lengths(const std::string& text) {
  auto number = [&](const std::string& part) {
    int64_t x = 0;
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), x);
    if (part.empty() || ec != std::errc() || end != part.data() + part.size() || x < 1 || x > (1 << 20))
      throw Error("--lengths " + text + ": must be MIN-MAX (or one length), tokens from 1");
    return x;
  };
  const size_t dash = text.find('-');
  Lengths l;
  l.min = number(text.substr(0, dash));
  l.max = dash == std::string::npos ? l.min : number(text.substr(dash + 1));
  if (l.max < l.min) throw Error("--lengths " + text + ": MIN must not exceed MAX");
  return l;
}

std::map<std::string, Dims> with_length(const serve::Signature& sig, const std::map<std::string, Dims>& request,
                                        int64_t length) {
  auto dims = request;
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    auto it = dims.find(sig.inputs[i].name);
    if (sig.input_has_seq[i] && it != dims.end() && it->second.size() > 1) it->second[1] = length;
  }
  return dims;
}

int64_t request_length(const serve::Signature& sig, const std::map<std::string, Dims>& request) {
  for (size_t i = 0; i < sig.inputs.size(); ++i) {
    auto it = request.find(sig.inputs[i].name);
    if (sig.input_has_seq[i] && it != request.end() && it->second.size() > 1) return it->second[1];
  }
  return 0;
}

std::vector<int64_t> effective_token_budgets(std::vector<int64_t> budgets, int64_t max_rows, int64_t max_length) {
  const int64_t cap = std::max<int64_t>(1, max_rows) * std::max<int64_t>(1, max_length);
  std::sort(budgets.begin(), budgets.end());
  budgets.erase(std::unique(budgets.begin(), budgets.end()), budgets.end());
  std::vector<int64_t> out;
  for (int64_t b : budgets) {
    if (b < 1) continue;
    out.push_back(b);
    if (b >= cap) break;  // every larger budget closes on rows first, as this one does
  }
  return out;
}

std::vector<int64_t> packed_time_points(int64_t max_tokens, int64_t token_bucket) {
  std::vector<int64_t> out;
  const int64_t top = serve::packed_capacity(std::max<int64_t>(1, max_tokens), token_bucket);
  for (int64_t t = std::max<int64_t>(1, token_bucket); t < top; t *= 4) out.push_back(serve::packed_capacity(t, token_bucket));
  out.push_back(top);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

// Requests of the load's lengths that fill `capacity` tokens exactly (the last one cut to fit).
std::vector<std::map<std::string, Tensor>> filling_requests(const Engine& engine, const serve::Signature& sig,
                                                            const std::map<std::string, Dims>& request, Lengths lengths,
                                                            int64_t capacity) {
  std::vector<std::map<std::string, Tensor>> out;
  LengthDraw draw(lengths, 7);
  for (int64_t left = capacity; left > 0;) {
    const int64_t length = std::min(left, draw.next());
    out.push_back(engine.sample_inputs(with_length(sig, request, length)));
    left -= length;
  }
  return out;
}

}  // namespace

ServiceTimes measure_packed_times(const Engine& engine, const serve::Signature& sig,
                                  const std::map<std::string, Dims>& request, const SessionOptions& options,
                                  const std::vector<int64_t>& capacities, Lengths lengths, Layout layout, double seconds,
                                  const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  ServiceTimes out;
  for (int64_t capacity : capacities) {
    if (stop.load()) break;
    const auto requests = filling_requests(engine, sig, request, lengths, capacity);
    std::vector<double> medians(static_cast<size_t>(layout.contexts));
    std::exception_ptr failed;
    std::vector<std::thread> contexts;
    cpu::release_openmp_team();  // an idle team here would slow the contexts' (thread_pool.h)
    for (int64_t c = 0; c < layout.contexts; ++c)
      contexts.emplace_back([&, c] {
        try {
          cpu::become_compute_thread(layout.threads_per_context);
          PackedSession session = packed_session(engine, capacity, options);
          session.run(requests);  // warm: first-run allocations and primitive creation
          std::vector<double> ms;
          const auto start = Clock::now();
          while (ms.size() < 3 || (std::chrono::duration<double>(Clock::now() - start).count() < seconds && !stop.load())) {
            const auto t0 = Clock::now();
            session.run(requests);
            ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
          }
          medians[static_cast<size_t>(c)] = percentile(ms, 50);
        } catch (...) {
          failed = std::current_exception();  // one context's failure is the measurement's
        }
      });
    for (auto& t : contexts) t.join();
    if (failed) std::rethrow_exception(failed);
    double sum = 0;
    for (double m : medians) sum += m;
    out.ms_by_rows[capacity] = sum / static_cast<double>(medians.size());
  }
  return out;
}

SimResult simulate_token_batcher(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                 int64_t token_bucket, const std::vector<double>& arrivals_s,
                                 const std::vector<int64_t>& tokens) {
  using Clock = std::chrono::steady_clock;
  const int64_t max_rows = std::max<int64_t>(1, cls.max_batch);
  const int64_t budget = std::max<int64_t>(1, cls.max_batch_tokens);
  BatchRule rule;  // as Batcher::take_ready fills and takes it in token mode
  rule.target = budget;
  rule.size = [&](const std::deque<SimRequest>& queue) {
    if (static_cast<int64_t>(queue.size()) >= max_rows) return budget;  // the row limit closes it too
    int64_t queued = 0;
    for (const SimRequest& r : queue) queued += r.tokens;
    return queued;
  };
  rule.take = [&](std::deque<SimRequest>& queue, std::vector<Clock::time_point>& taken) {
    // In order while both limits hold, skipping a request that does not fit (as the batcher).
    int64_t rows = 0, batch_tokens = 0;
    for (auto it = queue.begin(); it != queue.end() && rows < max_rows;) {
      if (rows > 0 && batch_tokens + it->tokens > budget) {
        ++it;
        continue;
      }
      ++rows;
      batch_tokens += it->tokens;
      taken.push_back(it->arrived);
      it = queue.erase(it);
    }
    const double ms = times.at(serve::packed_capacity(batch_tokens, token_bucket));
    return std::chrono::round<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
  };
  return simulate_events(cls, contexts, rule, arrivals_s, tokens);
}

double simulated_token_capacity(const TrafficClass& cls, int64_t contexts, const ServiceTimes& times,
                                int64_t token_bucket, Lengths lengths, double p99_ms) {
  std::vector<int64_t> tokens(4096);
  LengthDraw draw(lengths, 5);
  for (int64_t& t : tokens) t = draw.next();
  // The most the contexts could ever do: full batches back to back.
  const double mean_tokens = static_cast<double>(lengths.min + lengths.max) / 2;
  const int64_t full = std::min<int64_t>(std::max<int64_t>(1, cls.max_batch_tokens),
                                         static_cast<int64_t>(static_cast<double>(cls.max_batch) * mean_tokens));
  const double per_batch = std::max(1.0, static_cast<double>(full) / mean_tokens);
  const double ceiling = static_cast<double>(contexts) * per_batch /
                         std::max(1e-6, times.at(serve::packed_capacity(std::max<int64_t>(1, full), token_bucket)) / 1e3);
  auto meets = [&](double rate) {
    const double duration = 3000.0 / rate;
    for (uint64_t seed : {11u, 12u, 13u})
      if (simulate_token_batcher(cls, contexts, times, token_bucket, poisson_arrivals(rate, duration, seed), tokens).p99_ms >
          p99_ms)
        return false;
    return true;
  };
  double lo = ceiling * 0.01, hi = ceiling;
  if (!meets(lo)) return 0;
  for (int i = 0; i < 14; ++i) {
    const double mid = (lo + hi) / 2;
    (meets(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace fusor::tune
