// kernel_profile: runs a model with the fast (or reference) executor and prints where the time
// goes, per kernel name and per op, using the executor's step hook.
//   kernel_profile model.onnx [batch=1] [seq=128] [threads=2] [runs=10] [ref|check|shapes]
// "shapes" splits the table by input shapes; "check" also runs the reference executor once and reports the largest output difference.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "fusor/engine.h"
#include "plan/plan.h"
#include "runtime/executor.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s model.onnx [batch] [seq] [threads] [runs] [ref]\n", argv[0]);
    return 2;
  }
  const int64_t batch = argc > 2 ? std::atoll(argv[2]) : 1;
  const int64_t seq = argc > 3 ? std::atoll(argv[3]) : 128;
  omp_set_num_threads(argc > 4 ? std::atoi(argv[4]) : 2);
  const int runs = argc > 5 ? std::atoi(argv[5]) : 10;
  const bool ref = argc > 6 && std::string(argv[6]) == "ref";
  const bool check = argc > 6 && std::string(argv[6]) == "check";
  const bool by_shape = argc > 6 && std::string(argv[6]) == "shapes";

  auto engine = fusor::Engine::load(argv[1]);
  auto dims = engine.bind_dims({}, batch, seq);
  auto feeds = engine.sample_inputs(dims);
  fusor::SessionOptions opts;
  opts.reference = ref;
  auto t0 = std::chrono::steady_clock::now();
  auto session = engine.session(dims, opts);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  session.run(feeds);  // warm-up

  struct Acc { double s = 0; int64_t n = 0; };
  std::map<std::string, Acc> by_kernel;
  const auto& plan = session.plan();
  session.executor().set_step_hook([&](size_t, const fusor::Step& st, double s) {
    const auto& node = plan.graph->nodes[static_cast<size_t>(st.node)];
    std::string key = node.op_type + " / " + st.kernel->name();
    if (by_shape) {
      for (int v : st.inputs)
        if (v >= 0) key += " " + fusor::dims_to_string(plan.types[static_cast<size_t>(v)].dims);
    }
    auto& a = by_kernel[key];
    a.s += s;
    a.n += 1;
  });
  auto r0 = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i) session.run(feeds);
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - r0).count() / runs;

  std::vector<std::pair<std::string, Acc>> rows(by_kernel.begin(), by_kernel.end());
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.s > b.second.s; });
  double steps = 0;
  for (auto& [k, a] : rows) steps += a.s / runs;
  std::printf("batch %lld seq %lld: %.2f ms/run (%.1f seq/s), steps %.2f ms, plan build %.2f s, %zu steps\n",
              static_cast<long long>(batch), static_cast<long long>(seq), total * 1e3, batch / total, steps * 1e3,
              build_s, plan.steps.size());
  std::printf("%9s %6s %6s  %s\n", "ms/run", "%", "calls", "op / kernel");
  for (auto& [k, a] : rows)
    std::printf("%9.3f %6.1f %6lld  %s\n", a.s / runs * 1e3, 100 * a.s / runs / steps,
                static_cast<long long>(a.n / runs), k.c_str());
  if (check) {
    fusor::SessionOptions ropts;
    ropts.reference = true;
    auto rsession = engine.session(dims, ropts);
    auto want = rsession.run(feeds);
    auto got = session.run(feeds);
    for (const auto& [name, w] : want) {
      const auto& g = got.at(name);
      double worst = 0, worst_rel = 0;
      for (int64_t i = 0; i < w.numel(); ++i) {
        double a = g.data<float>()[i], b = w.data<float>()[i];
        worst = std::max(worst, std::fabs(a - b));
        worst_rel = std::max(worst_rel, std::fabs(a - b) / (1e-5 + 1e-4 * std::fabs(b)));
      }
      std::printf("check %s: max |fast - ref| = %.3g, max err/tol(1e-5 + 1e-4|ref|) = %.3g\n", name.c_str(), worst,
                  worst_rel);
    }
  }
  return 0;
}
