// The unit tests' one fused-vs-reference harness: a graph's fast plan (fast kernels, with the
// fusion switches given) and its reference plan (reference kernels, no fusion) run on the same
// inputs, and every output must agree under a src/check/compare.h rule (twin_tolerance() unless
// a test names another). A disagreement names the output, how many elements fail, and the first
// failing and the largest differences with their coordinates. A case stays one line:
//
//   auto r = test::expect_fused_matches_reference(graph, {{"x", x}});
//   EXPECT_EQ(r.fused.steps.size(), 1u) << r.kernels();
//
// Every use of the planner, executor and exporter internals by the harness-based tests (plans,
// executors, an Engine from a hand-built graph) sits in this header, so an API change there is
// adapted here once.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include "check/compare.h"
#include "fusor/engine.h"
#include "kernels/cpu/backend.h"
#include "onnx/exporter.h"
#include "plan/plan.h"
#include "runtime/executor.h"

namespace fusor::test {

using Feeds = std::map<std::string, Tensor>;

inline std::string coordinates(const Dims& dims, int64_t flat) {
  std::vector<int64_t> at(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    at[d] = dims[d] > 0 ? flat % dims[d] : 0;
    flat = dims[d] > 0 ? flat / dims[d] : 0;
  }
  std::ostringstream s;
  s << "[";
  for (size_t d = 0; d < at.size(); ++d) s << (d ? ", " : "") << at[d];
  return s.str() + "]";
}

inline std::string element(const Tensor& t, int64_t i) {
  std::ostringstream s;
  s.precision(9);
  switch (t.dtype()) {
    case DType::Float32: s << t.data<float>()[i]; break;
    case DType::Int64: s << t.data<int64_t>()[i]; break;
    case DType::Int32: s << t.data<int32_t>()[i]; break;
    case DType::Bool: s << (t.data<bool>()[i] ? "true" : "false"); break;
    case DType::Undefined: s << "(undefined)"; break;
    default: s << t.scalar_as_double(i) << " (" << dtype_name(t.dtype()) << ")";
  }
  return s.str();
}

// One line on where `got` and `want` disagree under `tol` (d = compare_tensors(got, want, tol)).
inline std::string describe(const Difference& d, const Tensor& got, const Tensor& want, const Tolerance& tol) {
  std::ostringstream s;
  s.precision(3);
  if (d.shape_mismatch)
    return "got " + std::string(dtype_name(got.dtype())) + dims_to_string(got.dims()) + ", want " +
           dtype_name(want.dtype()) + dims_to_string(want.dims());
  s << d.failing << " of " << want.numel() << " elements differ";
  if (want.dtype() == DType::Float32) s << " beyond " << tol.atol << " + " << tol.rtol << "*|want|";
  auto at = [&](int64_t i) {
    std::ostringstream e;
    e.precision(3);
    e << coordinates(want.dims(), i) << ": got " << element(got, i) << ", want " << element(want, i);
    if (want.dtype() == DType::Float32 && std::isfinite(got.data<float>()[i]) && std::isfinite(want.data<float>()[i]))
      e << " (|diff| " << std::abs(static_cast<double>(got.data<float>()[i]) - want.data<float>()[i]) << ", allowed "
        << allowed_difference(tol, want.data<float>()[i]) << ")";
    return e.str();
  };
  if (d.first_failing >= 0) s << "; first at " << at(d.first_failing);
  if (d.worst_index >= 0 && d.worst_index != d.first_failing) s << "; largest |diff| at " << at(d.worst_index);
  return s.str();
}

// Every output of `got` against `want` under `tol`; the failure message names each output that
// disagrees (by `names` where given) and where.
inline ::testing::AssertionResult outputs_agree(const std::vector<Tensor>& got, const std::vector<Tensor>& want,
                                                const Tolerance& tol = twin_tolerance(),
                                                const std::vector<std::string>& names = {}) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << got.size() << " outputs, want " << want.size();
  std::ostringstream failures;
  for (size_t o = 0; o < got.size(); ++o) {
    Difference d = compare_tensors(got[o], want[o], tol);
    if (d.within) continue;
    failures << "\n  output " << o;
    if (o < names.size()) failures << " '" << names[o] << "'";
    failures << ": " << describe(d, got[o], want[o], tol);
  }
  if (failures.str().empty()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "outputs disagree:" << failures.str();
}

// ---- plans of a hand-built graph ---------------------------------------------------------------

inline std::map<std::string, Dims> dims_of(const Feeds& feeds) {
  std::map<std::string, Dims> dims;
  for (const auto& [name, t] : feeds) dims[name] = t.dims();
  return dims;
}

// The feeds in graph-input order (what Executor::run takes).
inline std::vector<Tensor> ordered(const Graph& g, const Feeds& feeds) {
  std::vector<Tensor> in;
  for (int v : g.inputs) in.push_back(feeds.at(g.values[static_cast<size_t>(v)].name));
  return in;
}

// The fast plan: the CPU backend's kernels, the fusion passes with `fusion` (none when empty); `wrap` replaces
// fused steps' kernels (check/faults.h).
inline Plan fast_plan(std::shared_ptr<const Graph> g, const std::map<std::string, Dims>& dims,
                      std::optional<FusionConfig> fusion = FusionConfig{}, KernelWrapper wrap = {}) {
  PlanOptions o;
  o.backend = &cpu::backend();
  o.fusion = std::move(fusion);
  o.wrap_fused_kernel = std::move(wrap);
  return build_plan(std::move(g), dims, o);
}

// The ground truth: reference kernels (float64 accumulation), no fusion.
inline Plan reference_plan(std::shared_ptr<const Graph> g, const std::map<std::string, Dims>& dims) {
  PlanOptions o;
  o.kernels = KernelChoice::Reference;
  return build_plan(std::move(g), dims, o);
}

inline std::vector<Tensor> run_plan(const Plan& plan, const Feeds& feeds) {
  return Executor(plan).run(ordered(*plan.graph, feeds));
}

inline std::string kernel_names(const Plan& plan) {
  std::string names;
  for (const Step& s : plan.steps) names += (names.empty() ? "" : " ") + s.kernel->name();
  return names;
}

// How many of the plan's steps run a node of op_type `kind` (a fused kind's name, or an op's).
inline size_t steps_of_kind(const Plan& plan, const std::string& kind) {
  size_t n = 0;
  for (const Step& s : plan.steps) n += plan.graph->nodes[static_cast<size_t>(s.node)].op_type == kind;
  return n;
}

// Whether `kernels` names `prefix` on packed weights, whichever GEMM the CPU got: fusor's panels
// or one-row GEMV (AVX2), its few-row loop or oneDNN's packed matmul (AVX-512).
inline bool has_packed_gemm(const std::string& kernels, const std::string& prefix) {
  for (const char* runs_on : {"_panel", "_gemv", "_rows", "_onednn_packed"})
    if (kernels.find(prefix + runs_on) != std::string::npos) return true;
  return false;
}

struct FusedAndReference {
  Plan fused, reference;
  std::vector<Tensor> fused_outputs, reference_outputs;
  std::string kernels() const { return kernel_names(fused); }  // the fast plan's steps
};

// Builds and runs both plans of `g` on `feeds` (named graph inputs; their dims bind the shapes).
inline FusedAndReference run_fused_and_reference(std::shared_ptr<const Graph> g, const Feeds& feeds,
                                                 std::optional<FusionConfig> fusion = FusionConfig{},
                                                 KernelWrapper wrap = {}) {
  const auto dims = dims_of(feeds);
  FusedAndReference r{fast_plan(g, dims, std::move(fusion), std::move(wrap)), reference_plan(g, dims), {}, {}};
  r.fused_outputs = run_plan(r.fused, feeds);
  r.reference_outputs = run_plan(r.reference, feeds);
  return r;
}

inline std::vector<std::string> output_names(const Graph& g) {
  std::vector<std::string> names;
  for (int v : g.outputs) names.push_back(g.values[static_cast<size_t>(v)].name);
  return names;
}

// A float32 tensor of normal(0, scale) values, the same for the same seed.
inline Tensor random_normal(Dims dims, float scale, uint32_t seed) {
  Tensor t(DType::Float32, std::move(dims));
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = normal(rng);
  return t;
}

// Runs both plans and expects every output to agree under `tol`; a failure is reported at the
// caller's line with the fast plan's kernels. Returns both plans for further assertions.
inline FusedAndReference expect_fused_matches_reference(
    std::shared_ptr<const Graph> g, const Feeds& feeds, std::optional<FusionConfig> fusion = FusionConfig{},
    const Tolerance& tol = twin_tolerance(), KernelWrapper wrap = {},
    // The builtins, not std::source_location: Debian 12's clang 14 (the sanitizer tree) lacks it.
    const char* caller_file = __builtin_FILE(), int caller_line = __builtin_LINE()) {
  ::testing::ScopedTrace trace(caller_file, caller_line, "fused vs reference");
  FusedAndReference r = run_fused_and_reference(g, feeds, std::move(fusion), std::move(wrap));
  EXPECT_TRUE(outputs_agree(r.fused_outputs, r.reference_outputs, tol, output_names(*g))) << "kernels: " << r.kernels();
  return r;
}

// Every value a step reads or writes, by name, as a step observer sees it.
inline std::map<std::string, Tensor> observed_values(const Plan& plan, const Feeds& inputs) {
  std::map<std::string, Tensor> seen;
  Executor ex(plan);
  ex.set_step_observer([&](size_t, const Step& step, std::span<const Tensor> in, std::span<const Tensor> out) {
    auto keep = [&](const std::vector<int>& ids, std::span<const Tensor> ts) {
      for (size_t i = 0; i < ids.size(); ++i)
        if (ids[i] >= 0 && ts[i].defined()) {
          Tensor copy(ts[i].dtype(), ts[i].dims());
          std::memcpy(copy.raw(), ts[i].raw(), ts[i].nbytes());
          seen[plan.graph->values[static_cast<size_t>(ids[i])].name] = std::move(copy);
        }
    };
    keep(step.inputs, in);
    keep(step.outputs, out);
  });
  ex.run(ordered(*plan.graph, inputs));
  return seen;
}

// ---- an Engine of a hand-built graph -----------------------------------------------------------

// The Engine loads models from files: the graph goes through the ONNX exporter into a temporary
// file first (fused nodes round-trip as functions in the "fusor" domain).
inline Engine engine_of(const Graph& g) {
  char path[] = "/tmp/fusor_test_graph_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw Error("engine_of: cannot create a temporary file");
  close(fd);
  try {
    export_onnx_file(g, path);
    Engine e = Engine::load(path);
    std::remove(path);
    return e;
  } catch (...) {
    std::remove(path);
    throw;
  }
}

}  // namespace fusor::test
