#include "check/gate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "check/faults.h"
#include "engine/internals.h"
#include "passes/cache_attention.h"

namespace fusor {
namespace {

using Feeds = std::map<std::string, Tensor>;

struct Sample {
  std::string name;
  Feeds feeds;
  int tier;  // 1 for ordinary samples, 4 for edge cases
};

// Tier 2's tolerance: the next looser mode (relaxed for strict; ten times relaxed for relaxed).
Tolerance block_tolerance(PrecisionCheck mode) {
  Tolerance t = tolerance_for(PrecisionCheck::Relaxed);
  if (mode == PrecisionCheck::Relaxed) t = {t.atol * 10, t.rtol * 10, t.max_ulp * 16};
  return t;
}

Tensor reshaped(const Tensor& t, const Dims& dims) {
  Tensor c(t.dtype(), dims);
  if (t.nbytes()) std::memcpy(c.raw(), t.raw(), t.nbytes());
  return c;
}

bool is_mask(const std::string& name) { return name.find("mask") != std::string::npos; }

// Edge cases: padding on either side and fully masked rows for text models; extreme magnitudes,
// zeros, negatives and denormals for float inputs.
std::vector<Sample> edge_samples(const Feeds& base) {
  std::vector<Sample> out;
  auto variant = [&](const std::string& name, auto&& change) {
    Feeds f;
    bool changed = false;
    for (const auto& [k, v] : base) {
      Tensor t = v.clone();
      changed |= change(k, t);
      f[k] = t;
    }
    if (changed) out.push_back({name, std::move(f), 4});
  };
  auto mask_edit = [](auto&& set) {
    return [set](const std::string& k, Tensor& t) {
      if (!is_mask(k) || t.dtype() != DType::Int64 || t.dims().size() != 2) return false;
      const int64_t rows = t.dims()[0], n = t.dims()[1];
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < n; ++i) t.data<int64_t>()[r * n + i] = set(i, n);
      return true;
    };
  };
  variant("right_padding", mask_edit([](int64_t i, int64_t n) { return int64_t{i < (n + 1) / 2}; }));
  variant("left_padding", mask_edit([](int64_t i, int64_t n) { return int64_t{i >= n / 2}; }));
  variant("fully_masked", mask_edit([](int64_t, int64_t) { return int64_t{0}; }));
  auto float_edit = [](auto&& f) {
    return [f](const std::string&, Tensor& t) {
      if (t.dtype() != DType::Float32) return false;
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = f(t.data<float>()[i]);
      return true;
    };
  };
  variant("large", float_edit([](float x) { return x * 1e3f; }));
  variant("small", float_edit([](float x) { return x * 1e-3f; }));
  variant("zeros", float_edit([](float) { return 0.0f; }));
  variant("negative", float_edit([](float x) { return -std::abs(x); }));
  variant("denormal", float_edit([](float x) { return x * 1e-39f; }));
  return out;
}

std::vector<Tensor> ordered(const Engine& engine, const Feeds& feeds) {
  std::vector<Tensor> v;
  for (const TensorInfo& in : engine.inputs()) {
    auto it = feeds.find(in.name);
    if (it == feeds.end()) throw Error("a sample has no input '" + in.name + "'", ErrorKind::InvalidArgument);
    v.push_back(it->second);
  }
  return v;
}

// One fused step as observed in the optimized run.
struct Capture {
  const Node* node;
  std::vector<Tensor> inputs, outputs;
  std::vector<bool> constant;  // per input: a plan-time constant (weights)
  std::vector<int> output_ids;  // the values the item writes (ids shared with the source graph)
  std::vector<int> input_ids;
};

// Every value a whole-model run computed, by value id (fused graphs keep the source's ids).
using Values = std::map<int, Tensor>;

// Runs `session` on `feeds`, keeping each step's outputs.
std::vector<Tensor> run_keeping_values(Session& session, const std::vector<Tensor>& feeds, Values& values) {
  Executor& executor = executor_of(session);
  executor.set_step_observer([&](size_t, const Step& step, std::span<const Tensor>, std::span<const Tensor> out) {
    for (size_t o = 0; o < out.size(); ++o)
      if (step.outputs[o] >= 0 && out[o].defined()) values[step.outputs[o]] = out[o].clone();
  });
  std::vector<Tensor> result = executor.run(feeds);
  executor.set_step_observer(nullptr);
  return result;
}

// The value `id` of a run, following views (a Reshape in one plan is a step in another).
std::optional<Tensor> value_of(const Plan& plan, const Values& values, int id) {
  int source = id;
  while (plan.alias_of[static_cast<size_t>(source)] >= 0) source = plan.alias_of[static_cast<size_t>(source)];
  auto it = values.find(source);
  if (it == values.end()) return std::nullopt;
  const Dims& dims = plan.types[static_cast<size_t>(id)].dims;
  if (numel_of(dims) != it->second.numel()) return std::nullopt;
  return reshaped(it->second, dims);
}

// Runs a fused node's body as its own plan on the captured inputs, with `backend`'s kernels when fast.
std::vector<Tensor> run_body(const Capture& c, KernelChoice kernels, const Backend* backend) {
  std::shared_ptr<const Graph> graph = c.node->body;
  // A body read back from an optimized model (a model-local function) has untyped inputs: they
  // take the captured values' types, as the fused node's inputs had them.
  const auto untyped = [&](int id) { return graph->values[static_cast<size_t>(id)].dtype == DType::Undefined; };
  if (std::any_of(graph->inputs.begin(), graph->inputs.end(), untyped)) {
    auto typed = std::make_shared<Graph>(*graph);
    for (size_t i = 0; i < typed->inputs.size(); ++i)
      if (untyped(typed->inputs[i])) typed->values[static_cast<size_t>(typed->inputs[i])].dtype = c.inputs[i].dtype();
    graph = typed;
  }
  const Graph& body = *graph;
  PlanOptions po;
  po.kernels = kernels;
  po.backend = backend;
  po.fusion.reset();
  std::map<std::string, Dims> dims;
  for (size_t i = 0; i < body.inputs.size(); ++i) {
    const std::string& name = body.values[static_cast<size_t>(body.inputs[i])].name;
    dims[name] = c.inputs[i].dims();
    if (c.constant[i]) po.frozen_inputs[name] = c.inputs[i];
  }
  try {
    Plan plan = build_plan(graph, dims, po);
    return Executor(plan).run(c.inputs);
  } catch (const Error& e) {
    throw Error("fusion item '" + c.node->name + "': running its body: " + e.what());
  }
}

// The tolerance for output `o` of a fused item: a quantized result (its body ends it in a
// QuantizeLinear) rounds once in the fused kernel where the native graph rounds a float32
// result, so it may be one quantization step off (compare.h).
Tolerance item_tolerance(const Node& fused, size_t o, Tolerance tol) {
  const Graph& body = *fused.body;
  const int producer = body.values[static_cast<size_t>(body.outputs[o])].producer;
  if (producer >= 0 && body.nodes[static_cast<size_t>(producer)].op == Op::QuantizeLinear) tol.quantization_steps = 1;
  return tol;
}

// Order-of-summation noise: 16 ULP of the largest magnitude among `truth`'s values. An error
// ratio between two float32 evaluations means nothing below it.
double noise_floor(const std::vector<Tensor>& truth) {
  float m = 0;
  for (const Tensor& t : truth)
    if (t.dtype() == DType::Float32)
      for (int64_t i = 0; i < t.numel(); ++i)
        if (std::isfinite(t.data<float>()[i])) m = std::max(m, std::abs(t.data<float>()[i]));
  return 16.0 * (std::nextafter(m, INFINITY) - m);
}

double max_abs_error(const std::vector<Tensor>& a, const std::vector<Tensor>& b, const Tolerance& tol) {
  double worst = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    Difference d = compare_tensors(a[i], b[i], tol);
    worst = std::max(worst, d.nonfinite_mismatch || d.shape_mismatch ? INFINITY : d.max_abs);
  }
  return worst;
}

class Gate {
 public:
  Gate(const Engine& engine, const CheckOptions& o)
      : engine_(engine), o_(o), tol_(tolerance_for(o.mode)), block_tol_(block_tolerance(o.mode)) {}

  CheckReport run() {
    collect_samples();
    CheckReport report;
    report.mode = precision_check_name(o_.mode);
    for (const Sample& s : samples_) report.samples.push_back(s.name);
    say("running the native and truth plans on " + std::to_string(samples_.size()) + " samples");
    reference_outputs();

    FusionConfig fusion = o_.fusion;
    auto target = std::make_shared<std::string>();
    std::set<std::string> decided;
    for (int round = 1; round <= o_.max_rounds; ++round) {
      report.rounds = round;
      SessionOptions so;
      so.fusion = fusion;
      InternalSessionOptions internal;
      if (!o_.inject_fault.empty())
        internal.wrap_fused_kernel = make_fault_injector(parse_fault(o_.inject_fault), target);
      Session opt = build_session(engine_, o_.dims, so, internal);
      std::vector<ItemVerdict> verdicts;
      std::vector<OutputVerdict> outputs;
      check_round(opt, round, verdicts, outputs);
      std::vector<std::string> failing;
      for (ItemVerdict& v : verdicts)
        if (v.status == ItemStatus::RolledBack) failing.push_back(v.name);
      bool outputs_ok = std::all_of(outputs.begin(), outputs.end(), [](const OutputVerdict& v) { return v.passed; });
      if (failing.empty() && !outputs_ok && !verdicts.empty()) {
        // Every item passes alone but the model does not: items interact. Revert the one that
        // moved furthest relative to its threshold, then check again.
        auto worst = std::max_element(verdicts.begin(), verdicts.end(), [](const auto& a, const auto& b) {
          return a.vs_native.max_abs / std::max(a.threshold, 1e-30) < b.vs_native.max_abs / std::max(b.threshold, 1e-30);
        });
        worst->status = ItemStatus::RolledBack;
        worst->tier = 3;
        failing.push_back(worst->name);
      }
      for (const ItemVerdict& v : verdicts)
        if (!decided.count(v.name) && (v.status == ItemStatus::RolledBack || failing.empty())) {
          report.items.push_back(v);
          decided.insert(v.name);
        }
      for (const auto& name : failing) {
        fusion.disabled.push_back(name);
        report.rolled_back.push_back(name);
        say("round " + std::to_string(round) + ": rolled back " + name);
      }
      if (failing.empty()) {
        report.outputs = std::move(outputs);
        report.passed = outputs_ok;
        break;
      }
    }
    report.injected_into = *target;  // "" when no item took the fault
    report.final_fusion = fusion;
    return report;
  }

 private:
  void say(const std::string& line) const {
    if (o_.progress) o_.progress(line);
  }

  void collect_samples() {
    if (!o_.samples.empty()) {
      for (size_t i = 0; i < o_.samples.size(); ++i) samples_.push_back({"sample" + std::to_string(i), o_.samples[i], 1});
    } else {
      samples_.push_back({"random", engine_.sample_inputs(o_.dims, 0), 1});
      samples_.push_back({"random2", engine_.sample_inputs(o_.dims, 1), 1});
    }
    if (o_.edge_cases)
      for (Sample& s : edge_samples(samples_[0].feeds)) samples_.push_back(std::move(s));
  }

  void reference_outputs() {
    SessionOptions native_o, truth_o;
    native_o.fusion.reset();
    truth_o.reference = true;
    truth_o.fusion.reset();
    native_session_ = std::make_unique<Session>(engine_.session(o_.dims, native_o));
    truth_session_ = std::make_unique<Session>(engine_.session(o_.dims, truth_o));
    const Graph& g = *plan_of(*native_session_).graph;
    for (const Node& n : g.nodes)
      if (n.op == Op::QuantizeLinear || n.op == Op::DynamicQuantizeLinear)
        for (int v : n.outputs)
          if (v >= 0) decision_values_.insert(v);
    for (const Sample& s : samples_) {
      native_values_.emplace_back();
      truth_values_.emplace_back();
      native_.push_back(run_keeping_values(*native_session_, ordered(engine_, s.feeds), native_values_.back()));
      truth_.push_back(run_keeping_values(*truth_session_, ordered(engine_, s.feeds), truth_values_.back()));
    }
  }

  // Tier 2: the item's outputs in the optimized run against the same values in the whole-model
  // native and truth runs. Rounding differences accumulate and are amplified over the blocks
  // (a GEMM of width 1536 turns input differences within strict tolerance into output ones beyond
  // it), so block outputs are held to the next looser tolerance, and an item is blamed only where
  // the drift starts: its inputs still agree with native, its outputs no longer do, and by more
  // than the native kernels' own outputs from the same inputs (`native_body`) do. A normalization
  // over a nearly constant row amplifies an input difference within tolerance into an output one
  // beyond it, fused or not: that drift comes from upstream.
  void check_block_outputs(const Capture& c, const std::vector<Tensor>& native_body, size_t si, ItemVerdict& v) const {
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (c.constant[i] || c.input_ids[i] < 0) continue;
      auto native = value_of(plan_of(*native_session_), native_values_[si], c.input_ids[i]);
      if (native && !compare_tensors(c.inputs[i], *native, block_tol_).within) return;  // inherited drift
    }
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      auto native = value_of(plan_of(*native_session_), native_values_[si], c.output_ids[o]);
      auto truth = value_of(plan_of(*truth_session_), truth_values_[si], c.output_ids[o]);
      if (!native || !truth) continue;
      const Tolerance tol = item_tolerance(*c.node, o, block_tol_);
      Difference d = compare_tensors(c.outputs[o], *native, tol);
      if (d.within) continue;
      const Difference inherited = compare_tensors(native_body[o], *native, tol);
      if (!d.nonfinite_mismatch && !d.shape_mismatch && d.max_abs <= o_.margin * inherited.max_abs) continue;
      const double fused_err = max_abs_error({c.outputs[o]}, {*truth}, tol);
      const double native_err = max_abs_error({*native}, {*truth}, tol);
      const bool nonfinite = d.nonfinite_mismatch || d.shape_mismatch;
      if (nonfinite || fused_err > o_.margin * native_err + block_tol_.atol / 10 + noise_floor({*truth})) {
        v.status = ItemStatus::RolledBack;
        v.tier = 2;
        v.vs_native = d;
        v.threshold = block_tol_.atol + block_tol_.rtol * std::abs(static_cast<double>(native->data<float>()[std::max<int64_t>(d.worst_index, 0)]));
        v.native_vs_truth = native_err;
        v.fused_vs_truth = fused_err;
        return;
      }
    }
  }

  void check_round(Session& opt, int round, std::vector<ItemVerdict>& verdicts, std::vector<OutputVerdict>& outputs) {
    const Plan& plan = plan_of(opt);
    Executor& executor = executor_of(opt);
    std::map<std::string, size_t> index;  // item name -> verdict
    for (size_t si = 0; si < samples_.size(); ++si) {
      const Sample& s = samples_[si];
      std::vector<Capture> captures;
      Values decisions;  // the fused run's quantization decisions, by value id
      executor.set_step_observer([&](size_t, const Step& step, std::span<const Tensor> in, std::span<const Tensor> out) {
        for (size_t o = 0; o < out.size(); ++o)
          if (decision_values_.count(step.outputs[o]) && out[o].defined()) decisions[step.outputs[o]] = out[o].clone();
        const Node& node = plan.graph->nodes[static_cast<size_t>(step.node)];
        if (node.op != Op::Fused) return;
        Capture c{&node, {}, {}, {}, step.outputs, step.inputs};
        for (size_t i = 0; i < in.size(); ++i) {
          c.inputs.push_back(in[i].clone());
          c.constant.push_back(step.inputs[i] >= 0 && plan.is_constant(step.inputs[i]));
        }
        for (const Tensor& t : out) c.outputs.push_back(t.clone());
        captures.push_back(std::move(c));
      });
      std::vector<Tensor> got = executor.run(ordered(engine_, s.feeds));
      executor.set_step_observer(nullptr);
      say("round " + std::to_string(round) + ", sample " + s.name + ": checking " + std::to_string(captures.size()) +
          " fusion items");

      for (const Capture& c : captures) {
        std::vector<Tensor> native = run_body(c, KernelChoice::Fast, plan.backend),
                            truth = run_body(c, KernelChoice::Reference, nullptr);
        ItemVerdict v;
        v.name = c.node->name;
        v.kind = c.node->op_type;
        v.sample = s.name;
        v.tier = s.tier;
        v.round = round;
        bool within = true;
        Tolerance item_tol = tol_;
        for (size_t o = 0; o < c.outputs.size(); ++o) {
          item_tol = item_tolerance(*c.node, o, tol_);
          Difference d = compare_tensors(c.outputs[o], native[o], item_tol);
          within = within && d.within;
          if (d.max_abs >= v.vs_native.max_abs || d.nonfinite_mismatch) {
            v.vs_native = d;
            v.threshold = threshold_at(native[o], d.worst_index, item_tol);
          }
        }
        // Output by output: one noise floor over all of an item's outputs (merged Q, K and V) took
        // the largest's, which hid a whole error in a smaller one.
        bool worse = false;
        for (size_t o = 0; o < c.outputs.size() && o < truth.size(); ++o) {
          const Tolerance out_tol = item_tolerance(*c.node, o, tol_);
          const double native_err = max_abs_error({native[o]}, {truth[o]}, out_tol);
          const double fused_err = max_abs_error({c.outputs[o]}, {truth[o]}, out_tol);
          v.native_vs_truth = std::max(v.native_vs_truth, native_err);
          v.fused_vs_truth = std::max(v.fused_vs_truth, fused_err);
          worse = worse || fused_err > o_.margin * native_err + tol_.atol / 10 + noise_floor({truth[o]});
        }
        const bool nonfinite = v.vs_native.nonfinite_mismatch || v.vs_native.shape_mismatch;
        v.status = !within && (nonfinite || worse) ? ItemStatus::RolledBack : ItemStatus::Kept;
        if (v.status == ItemStatus::Kept) check_block_outputs(c, native, si, v);
        auto it = index.find(v.name);
        if (it == index.end()) {
          index[v.name] = verdicts.size();
          verdicts.push_back(v);
        } else if (verdicts[it->second].status == ItemStatus::Kept &&
                   (v.status == ItemStatus::RolledBack || v.vs_native.max_abs > verdicts[it->second].vs_native.max_abs)) {
          verdicts[it->second] = v;  // keep the worst sample's figures
        }
      }
      std::vector<Tensor> pinned;  // native with the fused run's quantization decisions, when needed
      for (size_t o = 0; o < got.size(); ++o) {
        OutputVerdict ov;
        ov.name = engine_.outputs()[o].name;
        ov.sample = s.name;
        auto custom = o_.output_tolerances.find(ov.name);
        const Tolerance& tol = custom == o_.output_tolerances.end() ? tol_ : custom->second;
        ov.vs_native = compare_tensors(got[o], native_[si][o], tol);
        ov.vs_truth = compare_tensors(got[o], truth_[si][o], tol);
        ov.native_vs_truth = compare_tensors(native_[si][o], truth_[si][o], tol);
        const bool worse =
            ov.vs_truth.max_abs > o_.margin * ov.native_vs_truth.max_abs + tol.atol / 10 + noise_floor({truth_[si][o]});
        ov.passed = ov.vs_native.within || (!ov.vs_native.nonfinite_mismatch && !ov.vs_native.shape_mismatch && !worse);
        if (!ov.passed && !decisions.empty()) {
          if (pinned.empty()) pinned = run_native_pinned(s, decisions);
          ov.vs_native_pinned = compare_tensors(got[o], pinned[o], tol);
          ov.passed = ov.vs_native_pinned->within;
        }
        outputs.push_back(ov);
      }
    }
  }

  // Native on `s`'s inputs with every QuantizeLinear and DynamicQuantizeLinear result replaced by
  // the fused run's: a value near a rounding boundary goes either way under float32 noise, and a
  // DynamicQuantizeLinear whose input's largest value moved by one ULP rescales its whole tensor,
  // so a quantized model's outputs can move by whole steps while every fused item is within its
  // rule (each quantized result within one step, each float one within the tolerance). With the
  // decisions the same, what is left to compare is the float arithmetic between them.
  std::vector<Tensor> run_native_pinned(const Sample& s, const Values& decisions) const {
    Executor& native = executor_of(*native_session_);
    const Plan& plan = plan_of(*native_session_);
    native.set_step_override([&](const Step& step, std::span<Tensor> outs) {
      for (size_t o = 0; o < outs.size(); ++o) {
        const int v = step.outputs[o];
        auto it = decisions.find(v);
        const bool blocked = !plan.blocked_by.empty() && v >= 0 && plan.blocked_by[static_cast<size_t>(v)];
        if (it == decisions.end() || blocked || outs[o].dtype() != it->second.dtype() || outs[o].dims() != it->second.dims())
          continue;
        if (outs[o].nbytes()) std::memcpy(outs[o].raw(), it->second.raw(), outs[o].nbytes());
      }
    });
    std::vector<Tensor> out = native.run(ordered(engine_, s.feeds));
    native.set_step_override(nullptr);
    return out;
  }

  static double threshold_at(const Tensor& expected, int64_t index, const Tolerance& tol) {
    if (expected.dtype() != DType::Float32) return static_cast<double>(tol.quantization_steps);
    if (index < 0) return tol.atol;
    return tol.atol + tol.rtol * std::abs(static_cast<double>(expected.data<float>()[index]));
  }

  const Engine& engine_;
  const CheckOptions& o_;
  Tolerance tol_, block_tol_;
  std::vector<Sample> samples_;
  std::vector<std::vector<Tensor>> native_, truth_;  // per sample, model outputs
  std::unique_ptr<Session> native_session_, truth_session_;
  std::set<int> decision_values_;  // results of QuantizeLinear and DynamicQuantizeLinear (native's ids)
  std::vector<Values> native_values_, truth_values_;  // per sample, every value of the run
};

}  // namespace

void add_kv_cache_item(CheckReport& report, KvCacheVerdict verdict) {
  if (verdict.applicable && verdict.cached && !verdict.passed) {
    report.rolled_back.push_back(kCacheAttentionItem);
    report.final_fusion.disabled.push_back(kCacheAttentionItem);
  }
  report.kv_cache = std::move(verdict);
}

CheckReport run_precision_gate(const Engine& engine, const CheckOptions& options) {
  CheckReport report = Gate(engine, options).run();
  // Edge shapes (sequence length 1, the largest batch): each is a gate of its own on the plan
  // the main gate settled on; what it rolls back is added, as tier 4.
  for (const auto& dims : options.edge_dims) {
    CheckOptions edge = options;
    edge.dims = dims;
    edge.samples.clear();
    edge.edge_cases = false;
    edge.edge_dims.clear();
    edge.fusion = report.final_fusion;
    // One faulted item per run: an edge gate left to pick "the first that fits" would fault a
    // healthy item once the faulted one is rolled back, and roll that one back too.
    if (!report.injected_into.empty())
      edge.inject_fault = parse_fault(options.inject_fault).kind + "@" + report.injected_into;
    std::string label = dims.empty() ? "" : dims.begin()->first + "=" + dims_to_string(dims.begin()->second);
    // A shape the model itself does not take (an audio model's single sample) is no edge of it:
    // the reference plan, which fusion does not touch, cannot be built there either.
    try {
      SessionOptions reference;
      reference.reference = true;
      engine.session(dims, reference);
    } catch (const Error& e) {
      report.skipped_edge_shapes.push_back(label + ": " + e.what());
      if (options.progress) options.progress("edge shape " + label + " skipped: the model does not take it: " + e.what());
      continue;
    }
    if (options.progress) options.progress("edge shape " + label);
    CheckReport r = Gate(engine, edge).run();
    for (ItemVerdict v : r.items)
      if (v.status == ItemStatus::RolledBack) {
        v.tier = 4;
        v.sample = "shape " + label + ", " + v.sample;
        report.items.push_back(v);
        report.rolled_back.push_back(v.name);
      }
    for (OutputVerdict o : r.outputs) {
      o.sample = "shape " + label + ", " + o.sample;
      report.outputs.push_back(o);
    }
    report.passed = report.passed && r.passed;
    report.final_fusion = r.final_fusion;
    report.rounds += r.rounds;
    if (report.injected_into.empty()) report.injected_into = r.injected_into;
  }
  // A fault no plan took would otherwise pass as if it had been caught.
  if (!options.inject_fault.empty() && report.injected_into.empty())
    throw Error("--inject-fault " + options.inject_fault + ": no fused item " +
                    (parse_fault(options.inject_fault).item.empty() ? "" : "of that name ") + "takes that fault",
                ErrorKind::InvalidArgument);
  if (options.check_packing) {
    if (options.progress) options.progress("packing");
    PackingCheckOptions po;
    po.fusion = report.final_fusion;
    for (const auto& [name, dims] : options.dims) po.max_length = std::max<int64_t>(2, dims.size() == 2 ? dims[1] : 2);
    report.packing = check_packing(engine, po);
    if (report.packing->packable && !report.packing->passed) report.rolled_back.push_back(kPackingItem);
  }
  if (options.check_kv_cache) {
    if (options.progress) options.progress("kv_cache");
    KvCacheCheckOptions ko;
    ko.fusion = report.final_fusion;
    add_kv_cache_item(report, check_kv_cache(engine, options.model_file, ko));
  }
  return report;
}

}  // namespace fusor
