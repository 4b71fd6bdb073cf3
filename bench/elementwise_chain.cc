// elementwise_chain: a chain of 8 elementwise ops over a 64 MiB float tensor, run by the fused
// Elementwise kernel, against the machine's copy bandwidth (src/profile/ceilings). Bytes counted
// are the fused kernel's input + output bytes; the target (issue 3) is >= 80% of copy.
// The unfused plan's kernels run the same chain one op at a time, for the ratio.
//   OMP_NUM_THREADS=2 elementwise_chain [reps=20] [MiB=64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/cpu/backend.h"
#include "plan/plan.h"
#include "profile/ceilings.h"

using namespace fusor;

namespace {


int add_value(Graph& g, const std::string& name, DType t = DType::Float32) {
  Value v;
  v.name = name;
  v.dtype = t;
  return g.add_value(std::move(v));
}

// x -> Mul 2 -> Add 1 -> Relu -> Sub 0.5 -> Mul x -> Abs -> Neg -> Add x: eight ops, one input.
std::shared_ptr<const Graph> chain() {
  auto g = std::make_shared<Graph>();
  g->opset = 17;
  int x = add_value(*g, "x");
  g->inputs = {x};
  auto constant = [&](const char* name, float v) {
    int id = add_value(*g, name);
    Tensor t(DType::Float32, {});
    t.data<float>()[0] = v;
    g->values[static_cast<size_t>(id)].constant = t;
    return id;
  };
  int v = x, step = 0;
  auto node = [&](Op op, std::vector<int> in) {
    Node n;
    n.op = op;
    n.op_type = op_info(op).name;
    n.opset = 17;
    n.name = "op" + std::to_string(step);
    n.inputs = std::move(in);
    int out = add_value(*g, "v" + std::to_string(step++));
    g->values[static_cast<size_t>(out)].producer = static_cast<int>(g->nodes.size());
    n.outputs = {out};
    g->nodes.push_back(std::move(n));
    return v = out;
  };
  node(Op::Mul, {v, constant("two", 2)});
  node(Op::Add, {v, constant("one", 1)});
  node(Op::Relu, {v});
  node(Op::Sub, {v, constant("half", .5f)});
  node(Op::Mul, {v, x});
  node(Op::Abs, {v});
  node(Op::Neg, {v});
  node(Op::Add, {v, x});
  g->outputs = {v};
  return g;
}

// Best time over `reps` of running every step's kernel once, on plain tensors (no executor copies).
double best_seconds(const Plan& plan, const Tensor& x, int reps) {
  std::vector<Tensor> values(plan.types.size());
  values[static_cast<size_t>(plan.graph->inputs[0])] = x;
  for (const Step& s : plan.steps)
    for (int v : s.outputs) values[static_cast<size_t>(v)] = Tensor(DType::Float32, plan.types[static_cast<size_t>(v)].dims);
  for (size_t v = 0; v < values.size(); ++v)
    if (plan.is_constant(static_cast<int>(v))) values[v] = plan.constants[v];
  double best = 1e9;
  for (int r = 0; r <= reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (const Step& s : plan.steps) {
      std::vector<Tensor> in, out;
      for (int v : s.inputs) in.push_back(values[static_cast<size_t>(v)]);
      for (int v : s.outputs) out.push_back(values[static_cast<size_t>(v)]);
      s.kernel->run(in, out, {});
    }
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, t);  // the first run faults the pages in
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 20;
  const int64_t kElems = (argc > 2 ? std::atoll(argv[2]) : 64) << 18;  // MiB of float32
  auto g = chain();
  PlanOptions fused_options, unfused_options;
  fused_options.backend = &cpu::backend();
  unfused_options.backend = &cpu::backend();
  fused_options.fusion = FusionConfig{};
  Plan fused = build_plan(g, {{"x", {kElems}}}, fused_options);
  Plan unfused = build_plan(g, {{"x", {kElems}}}, unfused_options);
  Tensor x(DType::Float32, {kElems});
  for (int64_t i = 0; i < kElems; ++i) x.data<float>()[i] = static_cast<float>(i % 1000) / 100.f - 5.f;

  const double copy = measure_copy_gbps(kElems * sizeof(float), 5);
  const double bytes = 2.0 * kElems * sizeof(float);  // the fused kernel reads x once and writes y
  const double tf = best_seconds(fused, x, reps), tu = best_seconds(unfused, x, reps);
  std::printf("copy bandwidth (%lld MiB):  %.1f GB/s\n", static_cast<long long>(kElems >> 18), copy);
  std::printf("fused   %-36s %7.2f ms  %5.1f GB/s  %5.1f%% of copy\n",
              fused.steps.size() == 1 ? fused.steps[0].kernel->name().c_str() : "(not fused)", tf * 1e3,
              bytes / tf / 1e9, 100 * bytes / tf / 1e9 / copy);
  std::printf("unfused %zu kernels%27s %7.2f ms  (fused is %.2fx faster)\n", unfused.steps.size(), "", tu * 1e3, tu / tf);
  return 0;
}
