#include "tune/service_times.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <thread>

#include "kernels/cpu/thread_pool.h"
#include "tune/open_loop.h"

namespace fusor::tune {

std::vector<FusionOption> fusion_options(const FusionConfig& base) {
  FusionConfig no_attention = base, none = base;
  no_attention.fuse_attention = false;
  set_every_switch(none, false);
  std::vector<FusionOption> out = {{"all", base}};
  if (!(no_attention == base)) out.push_back({"no-attention", no_attention});
  if (!(none == base)) out.push_back({"none", none});
  return out;
}

std::vector<FusionOption> distinct_plans(const Engine& engine, const std::map<std::string, Dims>& request,
                                         const SessionOptions& base, const std::vector<FusionOption>& options,
                                         std::vector<std::pair<std::string, std::string>>& repeats) {
  struct PlanShape {
    std::vector<std::string> items;  // name/kind/pass of each fusion item
    size_t kernels = 0;
    bool operator==(const PlanShape&) const = default;
  };
  std::vector<PlanShape> shapes(options.size());
  std::exception_ptr failed;
  const auto feeds = engine.sample_inputs(request);
  cpu::release_openmp_team();
  std::thread builder([&] {  // building packs weights in parallel regions: keep that team off this thread
    try {
      for (size_t i = 0; i < options.size(); ++i) {
        SessionOptions so = base;
        so.fusion = options[i].fusion;
        Session session = engine.session(request, so);
        session.run(feeds);  // a session planned per run has its plan only after a run
        for (const FusionItemInfo& item : session.fusion_items())
          shapes[i].items.push_back(item.name + "/" + item.kind + "/" + item.pass);
        std::sort(shapes[i].items.begin(), shapes[i].items.end());
        shapes[i].kernels = session.kernels_per_inference();
      }
    } catch (...) {
      failed = std::current_exception();
    }
  });
  builder.join();
  if (failed) std::rethrow_exception(failed);
  std::vector<FusionOption> kept;
  std::vector<size_t> kept_at;
  for (size_t i = 0; i < options.size(); ++i) {
    auto same = std::find_if(kept_at.begin(), kept_at.end(), [&](size_t k) { return shapes[k] == shapes[i]; });
    if (same != kept_at.end()) {
      repeats.emplace_back(options[i].name, options[*same].name);
      continue;
    }
    kept.push_back(options[i]);
    kept_at.push_back(i);
  }
  return kept;
}

std::map<std::string, Dims> with_rows(const std::map<std::string, Dims>& request, int64_t rows) {
  auto dims = request;
  for (auto& [name, d] : dims)
    if (!d.empty()) d[0] = rows;
  return dims;
}

ServiceTimes measure_service_times(const Engine& engine, const std::map<std::string, Dims>& request,
                                   const SessionOptions& options, const std::vector<int64_t>& rows, Layout layout,
                                   double seconds, const std::atomic<bool>& stop) {
  using Clock = std::chrono::steady_clock;
  ServiceTimes out;
  for (int64_t r : rows) {
    if (stop.load()) break;
    auto dims = with_rows(request, r);
    auto feeds = engine.sample_inputs(dims);
    std::vector<double> medians(static_cast<size_t>(layout.contexts));
    std::vector<std::thread> contexts;
    cpu::release_openmp_team();  // an idle team here would slow the contexts' (thread_pool.h)
    for (int64_t c = 0; c < layout.contexts; ++c)
      contexts.emplace_back([&, c] {
        cpu::become_compute_thread(static_cast<int>(layout.threads_per_context));
        Session session = engine.session(dims, options);
        session.run(feeds);  // warm: first-run allocations and primitive creation
        std::vector<double> ms;
        auto start = Clock::now();
        while (ms.size() < 3 || (std::chrono::duration<double>(Clock::now() - start).count() < seconds && !stop.load())) {
          auto t0 = Clock::now();
          session.run(feeds);
          ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        }
        medians[static_cast<size_t>(c)] = percentile(ms, 50);
      });
    for (auto& t : contexts) t.join();
    double sum = 0;
    for (double m : medians) sum += m;
    out.ms_by_rows[r] = sum / static_cast<double>(medians.size());
  }
  return out;
}

namespace {

// The median of one burst: runs `session` until at least `seconds` have passed, once at least.
double burst_ms(Session& session, const std::map<std::string, Tensor>& feeds, double seconds) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> ms;
  const auto start = Clock::now();
  do {
    const auto t0 = Clock::now();
    session.run(feeds);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  } while (std::chrono::duration<double>(Clock::now() - start).count() < seconds);
  return percentile(ms, 50);
}

// Rounds of one burst per session, in rotating order; [session][round] -> ms.
std::vector<std::vector<double>> run_rounds(std::vector<Session>& sessions, const std::map<std::string, Tensor>& feeds,
                                            double seconds, const std::atomic<bool>& stop) {
  const size_t n = sessions.size();
  std::vector<std::vector<double>> out(n);
  const double burst_s = seconds / kTargetRounds;
  const auto start = std::chrono::steady_clock::now();
  auto spent_s = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (size_t round = 0; round < static_cast<size_t>(kMinRounds) || spent_s() < seconds * static_cast<double>(n); ++round) {
    std::vector<double> ms(n);
    for (size_t k = 0; k < n && !stop.load(); ++k) {
      const size_t i = (round + k) % n;  // who goes first rotates: no option always follows the same one
      ms[i] = burst_ms(sessions[i], feeds, burst_s);
    }
    if (stop.load()) break;  // a partial round compares nothing
    for (size_t i = 0; i < n; ++i) out[i].push_back(ms[i]);
  }
  return out;
}

}  // namespace

RoundTimes measure_rounds(const Engine& engine, const std::map<std::string, Dims>& request, const SessionOptions& base,
                          const std::vector<FusionOption>& options, int64_t rows, int threads, double seconds,
                          const std::atomic<bool>& stop) {
  const auto dims = with_rows(request, rows);
  const auto feeds = engine.sample_inputs(dims);
  std::vector<std::vector<double>> per_round;
  std::exception_ptr failed;  // a plan that fails to build must reach the caller, not terminate
  // One thread builds and runs every session. (A session run from another thread than the one
  // that built it measured slower: the builder's idle OpenMP team, thread_pool.h.)
  cpu::release_openmp_team();
  std::thread context([&] {
    try {
      cpu::become_compute_thread(threads);
      std::vector<Session> sessions;
      for (const FusionOption& o : options) {
        SessionOptions so = base;
        so.fusion = o.fusion;
        sessions.push_back(engine.session(dims, so));
        sessions.back().run(feeds);  // warm: first-run allocations and primitive creation
      }
      per_round = run_rounds(sessions, feeds, seconds, stop);
    } catch (...) {
      failed = std::current_exception();
    }
  });
  context.join();
  if (failed) std::rethrow_exception(failed);
  RoundTimes out;
  for (size_t i = 0; i < per_round.size(); ++i)
    if (!per_round[i].empty()) out[options[i].name] = std::move(per_round[i]);
  return out;
}

}  // namespace fusor::tune
