// fusor check: the precision gate. Exit 0 when the final plan passes (rollbacks listed), 1 when it
// still fails, 2 for usage errors (CLI11 parse errors, see main.cc).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "commands.h"
#include "fusor/check.h"
#include "fusor/npy.h"
#include "model_args.h"

namespace fusor::cli {
namespace {

struct CheckArgs {
  ModelArgs model;
  std::string samples_dir, report_path, junit_path, fault;
  std::vector<std::string> tolerances;  // NAME=ATOL,RTOL[,ULP]
  std::string edge_seqs = "1", edge_batch;
  bool list_faults = false, no_edge_cases = false, replace_verdict = false;
};

// "1e-4,1e-3,64" -> {1e-4, 1e-3, 64}; empty on any malformed number.
std::vector<double> parse_numbers(const std::string& text) {
  std::vector<double> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) {
    try {
      size_t used = 0;
      out.push_back(std::stod(item, &used));
      if (used != item.size()) return {};
    } catch (const std::exception&) {
      return {};
    }
  }
  return out;
}

// check's exit 1 is a failed gate, so a mistake in its arguments that only the model shows (a
// --shape naming no input, a sample of the wrong dtype) must still exit 2, as a usage error.
template <typename F>
auto as_usage_error(F&& f) {
  try {
    return f();
  } catch (const Error& e) {
    throw CLI::ValidationError(e.what());
  }
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A directory of NAME.npy files is one sample; a directory of directories is one sample each.
// The gate binds one shape, so every sample must have the first one's.
std::vector<std::map<std::string, Tensor>> read_samples(const Engine& engine, const std::string& dir) {
  namespace fs = std::filesystem;
  auto one = [&](const fs::path& d) {
    std::map<std::string, Tensor> feeds;
    for (const TensorInfo& in : engine.inputs()) {
      fs::path p = d / (in.name + ".npy");
      if (!fs::exists(p)) throw Error("sample '" + d.string() + "' has no " + p.filename().string());
      feeds[in.name] = read_npy(p.string());
      if (feeds[in.name].dtype() != in.dtype)
        throw Error(p.string() + " holds " + dtype_name(feeds[in.name].dtype()) + ", input '" + in.name + "' is " +
                    dtype_name(in.dtype));
    }
    return feeds;
  };
  std::vector<fs::path> subdirs;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory()) subdirs.push_back(e.path());
  std::sort(subdirs.begin(), subdirs.end());
  if (subdirs.empty()) return {one(dir)};
  std::vector<std::map<std::string, Tensor>> out;
  for (const auto& d : subdirs) {
    out.push_back(one(d));
    for (const auto& [name, t] : out.back())
      if (t.dims() != out.front().at(name).dims())
        throw Error("sample '" + d.string() + "': " + name + ".npy is " + dims_to_string(t.dims()) + ", sample '" +
                    subdirs.front().string() + "' has " + dims_to_string(out.front().at(name).dims()) +
                    ": samples must share their shapes");
  }
  return out;
}

// "NAME=ATOL,RTOL[,MAX_ULP]" -> the output's name and tolerance; without MAX_ULP, the mode's.
std::pair<std::string, Tolerance> parse_tolerance(const std::string& spec, PrecisionCheck mode) {
  auto eq = spec.find('=');
  auto nums = eq == std::string::npos ? std::vector<double>{} : parse_numbers(spec.substr(eq + 1));
  if (eq == std::string::npos || nums.size() < 2 || nums.size() > 3 ||
      !std::all_of(nums.begin(), nums.end(), [](double x) { return std::isfinite(x) && x >= 0; }))
    throw CLI::ValidationError("--tolerance", "'" + spec + "' must look like OUTPUT=ATOL,RTOL[,MAX_ULP]");
  // A count of ULPs is an int64: a fraction or a value past its range has no meaning (and no cast).
  if (nums.size() == 3 && (nums[2] != std::floor(nums[2]) || nums[2] >= 0x1p63))
    throw CLI::ValidationError("--tolerance", "'" + spec + "': MAX_ULP must be a non-negative integer below 2^63");
  const int64_t max_ulp = nums.size() == 3 ? static_cast<int64_t>(nums[2]) : tolerance_for(mode).max_ulp;
  return {spec.substr(0, eq), Tolerance{nums[0], nums[1], max_ulp}};
}

void write_file(const std::string& path, const std::string& text, const char* what) {
  std::ofstream f(path);
  if (!f || !(f << text)) throw Error(std::string("cannot write ") + what + " '" + path + "'");
}

int check(const CheckArgs& a) {
  if (a.list_faults) {
    for (const auto& k : fault_kinds()) std::cout << k << "\n";
    return 0;
  }
  if (a.model.model.empty()) throw CLI::ValidationError("model", "give a MODEL (or --list-faults)");
  // `--report model.onnx` replaced the model with JSON, and a report over the verdict file the
  // verdict the check had just saved.
  for (const auto& [path, flag] : {std::pair{a.report_path, "--report"}, std::pair{a.junit_path, "--junit"}})
    if (!path.empty()) refuse_writing_over_model(path, a.model.model, flag, {a.model.config_path});
  if (!a.fault.empty()) {  // a bad kind is a usage error, found before any work
    try {
      parse_fault(a.fault);
    } catch (const Error& e) {
      throw CLI::ValidationError("--inject-fault", e.what());
    }
  }
  a.model.apply_threads();
  // Hashed before it loads: the verdict vouches for the bytes that were checked, not for what the
  // file holds when the check ends (save_verdict refuses a model that changed meanwhile).
  const std::string checked_hash = a.fault.empty() ? model_file_hash(a.model.model) : "";
  Engine engine = Engine::load(a.model.model);
  CheckOptions o;
  o.mode = a.model.config.fusion.precision_check == PrecisionCheck::Off ? PrecisionCheck::Strict
                                                                         : a.model.config.fusion.precision_check;
  o.fusion = a.model.config.fusion;
  const auto given = as_usage_error([&] { return a.model.parsed_shapes(); });
  auto shapes = given;
  if (!a.samples_dir.empty()) {
    o.samples = as_usage_error([&] { return read_samples(engine, a.samples_dir); });
    for (const auto& [name, t] : o.samples[0]) shapes[name] = t.dims();
  }
  const int64_t batch = a.model.batch(), seq = a.model.seq;
  o.dims = as_usage_error([&] { return bind_dims(engine, shapes, batch, seq); });
  o.edge_cases = !a.no_edge_cases;
  if (o.edge_cases) {
    // --samples sets the main shape only: the edge shapes run on generated samples, bound from
    // --shape, --batch and --seq as without it, so a check on real data still covers them.
    auto add_edge = [&](int64_t b, int64_t s) {
      auto dims = as_usage_error([&] { return bind_dims(engine, given, b, s); });
      if (dims != o.dims && std::find(o.edge_dims.begin(), o.edge_dims.end(), dims) == o.edge_dims.end())
        o.edge_dims.push_back(dims);
    };
    if (!a.edge_seqs.empty())
      for (int64_t s : parse_int_list(a.edge_seqs, "--edge-seq")) add_edge(batch, s);
    if (!a.edge_batch.empty())
      for (int64_t b : parse_int_list(a.edge_batch, "--edge-batch")) add_edge(b, seq);
  }
  for (const auto& spec : a.tolerances) {
    const auto parsed = parse_tolerance(spec, o.mode);  // not a structured binding: clang 14 cannot capture one
    const std::string& name = parsed.first;
    const std::vector<TensorInfo> outs = engine.outputs();
    if (std::none_of(outs.begin(), outs.end(), [&](const TensorInfo& t) { return t.name == name; }))
      throw CLI::ValidationError("--tolerance", "'" + spec + "': the model has no output '" + name + "'");
    o.output_tolerances[name] = parsed.second;
  }
  if (!a.fault.empty()) {  // an item no fault can go into is known from the plan, before the gate runs
    const FaultSpec spec = parse_fault(a.fault);
    if (auto targets = fault_targets(engine, o.dims, o.fusion, spec.kind)) {
      if (targets->empty()) throw CLI::ValidationError("--inject-fault", "no fusion item takes " + spec.kind);
      if (!spec.item.empty() && std::find(targets->begin(), targets->end(), spec.item) == targets->end())
        throw CLI::ValidationError("--inject-fault", "no fusion item '" + spec.item + "' takes " + spec.kind +
                                                         "; the items that do: " + joined(*targets));
    }
  }
  o.inject_fault = a.fault;
  o.model_file = a.model.model;
  o.progress = [](const std::string& line) { std::cerr << "check: " << line << "\n"; };
  CheckReport r = run_precision_gate(engine, o);

  size_t kept = 0;
  for (const auto& i : r.items) kept += i.status == ItemStatus::Kept;
  std::cout << (r.passed ? "PASSED" : "FAILED") << " (" << r.mode << "): " << r.items.size() << " fusion items, "
            << kept << " kept, " << r.rolled_back.size() << " rolled back, " << r.samples.size() << " samples, "
            << r.rounds << " round(s)\n";
  for (const auto& i : r.items)
    if (i.status == ItemStatus::RolledBack)
      std::cout << "  rolled back " << i.name << " (tier " << i.tier << ", sample " << i.sample << "): max abs "
                << i.vs_native.max_abs << " vs threshold " << i.threshold << ", error against truth " << i.fused_vs_truth
                << " (native " << i.native_vs_truth << ")\n";
  // The gate judges fusion; a difference the unfused kernels already have is a kernel's, and
  // would otherwise pass unseen (the fast Clip once turned NaN into 0, fused or not).
  std::set<std::string> warned;
  for (const auto& o : r.outputs)
    if (!o.native_vs_truth.within && warned.insert(o.name).second)
      std::cout << "  warning: output " << o.name << " differs from the reference kernels without fusion too (sample "
                << o.sample << ": "
                << (o.native_vs_truth.nonfinite_mismatch ? std::string("NaN or Inf where the other has none")
                                                         : "max abs " + std::to_string(o.native_vs_truth.max_abs))
                << "): a kernel's difference, not a fusion item's\n";
  if (const auto& p = r.packing) {
    if (!p->packable)
      std::cout << "  packing: not used, " << p->reason << "\n";
    else
      std::cout << "  packing: " << (p->passed ? "kept" : "rolled back") << ", " << p->requests.size()
                << " requests in one packed step; worst max abs " << p->vs_padded.max_abs << " against each alone ("
                << p->worst_request << "), " << p->vs_truth.max_abs << " against the reference kernels\n";
  }
  if (const auto& k = r.kv_cache) {
    if (!k->applicable || !k->cached)
      std::cout << "  kv_cache: not used, " << k->reason << "\n";
    else
      std::cout << "  kv_cache: " << (k->passed ? "kept" : "rolled back") << ", " << k->sequences.size()
                << " sequences in one paged cache, " << k->steps_compared << " steps; worst max abs "
                << k->vs_unfused.max_abs << " against each alone unfused (" << k->worst << "), " << k->vs_truth.max_abs
                << " in the reference kernels\n";
  }
  if (!r.injected_into.empty()) std::cout << "  fault " << a.fault << " injected into " << r.injected_into << "\n";
  // Only an unmodified plan's verdict is worth keeping: not one with a deliberate fault in it.
  if (a.fault.empty()) {
    Verdict v{checked_hash, verdict_config_key(o.fusion), r.passed, r.rolled_back,
              a.samples_dir.empty() ? "generated samples" : "samples " + a.samples_dir};
    std::vector<std::string> kept;
    std::string kept_from;
    if (!a.replace_verdict) v = keep_saved_rollbacks(a.model.model, std::move(v), kept, kept_from);
    if (!kept.empty()) {
      std::cout << "  kept the saved verdict's rollback of " << joined(kept) << " (checked on " << kept_from
                << "), which this check passed: --replace-verdict drops it\n";
    }
    std::cout << "  verdict saved to " << save_verdict(a.model.model, v) << "\n";
  }
  if (!a.report_path.empty()) write_file(a.report_path, check_report_json(r), "report");
  if (!a.junit_path.empty()) write_file(a.junit_path, check_report_junit(r), "JUnit file");
  return r.passed ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "Precision gate: check every fusion item, roll back the ones that fail");
  args->model.add_to(*cmd, {.seq = 16});  // the gate's default binding (docs/check.md)
  cmd->get_option("model")->required(false);
  // ModelArgs' own parsers exit 1, which here would read as a failed gate.
  cmd->get_option("--seq")->check(positive_integers(Count::One));
  cmd->get_option("--batch")->check(positive_integers(Count::One));
  cmd->add_option("--samples", args->samples_dir, "Directory of NAME.npy inputs (or of such directories)")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--report", args->report_path, "Write the JSON report (docs/check.md)")->check(writable_file());
  cmd->add_option("--junit", args->junit_path, "Write JUnit XML for CI")->check(writable_file());
  cmd->add_option("--inject-fault", args->fault, "Swap in a wrong fused kernel: KIND[@item]");
  cmd->add_flag("--list-faults", args->list_faults, "Print the fault kinds and exit");
  cmd->add_flag("--no-edge-cases", args->no_edge_cases, "Skip the tier-4 edge-case samples and shapes");
  cmd->add_flag("--replace-verdict", args->replace_verdict,
                 "Save this check's verdict alone: by default a saved verdict's rollbacks are kept");
  cmd->add_option("--edge-seq", args->edge_seqs, "Sequence lengths also checked (tier 4), e.g. 1,512; default 1")
      ->check(positive_integers(Count::ListOrNone));
  cmd->add_option("--edge-batch", args->edge_batch, "Batch sizes also checked (tier 4), e.g. the largest bucket")
      ->check(positive_integers(Count::List));
  cmd->add_option("--tolerance", args->tolerances, "Per-output tolerance OUTPUT=ATOL,RTOL[,MAX_ULP] (repeatable)");
  cmd->callback([args] {
    int code = check(*args);
    if (code != 0) throw ExitCode{code};
  });
}

}  // namespace fusor::cli
