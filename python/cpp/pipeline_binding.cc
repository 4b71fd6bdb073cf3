// The rest of the pipeline: the precision gate, the profiler and the optimizer, each returning
// the text the CLI writes (JSON for check and profile), which the Python side parses into plain
// objects. Each releases the GIL while it works.
#include <pybind11/stl.h>

#include "bindings.h"
#include "fusor/check.h"
#include "fusor/optimize.h"
#include "fusor/profile.h"

namespace fusor::python {

namespace {

void print_progress(const std::string& line) { std::fprintf(stderr, "check: %s\n", line.c_str()); }

// As fusor check: the gate's JSON report (docs/check.md), the verdict saved beside the model.
std::string check(const Engine& engine, const std::string& model_path, const Config& config,
                  const std::map<std::string, Dims>& dims, const py::list& samples, bool edge_cases,
                  const std::vector<std::map<std::string, Dims>>& edge_dims, bool save, bool progress) {
  CheckOptions o;
  o.mode = config.fusion.precision_check == PrecisionCheck::Off ? PrecisionCheck::Strict
                                                                 : config.fusion.precision_check;
  o.fusion = config.fusion;
  o.dims = dims;
  // The gate reads the samples after the GIL is released: give it its own copies.
  for (const auto& sample : samples) {
    std::map<std::string, Tensor> copy;
    for (const auto& [name, view] : tensor_views(py::reinterpret_borrow<py::dict>(sample), "sample input"))
      copy[name] = view.clone();
    o.samples.push_back(std::move(copy));
  }
  o.edge_cases = edge_cases;
  o.edge_dims = edge_dims;
  o.model_file = model_path;
  if (progress) o.progress = print_progress;
  py::gil_scoped_release release;
  CheckReport r = run_precision_gate(engine, o);
  if (save) save_verdict(model_path, {model_file_hash(model_path), verdict_config_key(o.fusion), r.passed, r.rolled_back});
  return check_report_json(r);
}

std::string profile(const Engine& engine, const std::map<std::string, Dims>& dims, const std::string& model_path,
                    int64_t batch, int64_t seq, int runs, int warmup, bool by_shape, const SessionOptions& session,
                    bool quick_ceilings, const std::string& cache_dir) {
  py::gil_scoped_release release;
  CeilingOptions co;
  co.quick = quick_ceilings;
  co.cache_dir = cache_dir;
  ProfileOptions po;
  po.model = model_path;
  po.batch = batch;
  po.seq = seq;
  po.runs = runs;
  po.warmup = warmup;
  po.by_shape = by_shape;
  po.session = session;
  return profile_json(profile_model(engine, dims, po, machine_ceilings(co)));
}

py::dict optimize(const Engine& engine, const std::map<std::string, Dims>& dims, const SessionOptions& options,
                  const std::string& path) {
  OptimizeResult r;
  {
    py::gil_scoped_release release;
    r = optimize_to_onnx(engine, dims, options, path);
  }
  py::list fused, declined;
  for (const OptimizedItem& i : r.fused)
    fused.append(py::dict(py::arg("kind") = i.kind, py::arg("name") = i.name, py::arg("nodes") = i.nodes));
  for (const DeclinedFusion& d : r.declined)
    declined.append(py::dict(py::arg("pass") = d.pass, py::arg("at") = d.at, py::arg("reason") = d.reason));
  return py::dict(py::arg("output") = path, py::arg("nodes_before") = r.nodes_before,
                  py::arg("nodes_after") = r.nodes_after, py::arg("fused") = fused, py::arg("declined") = declined,
                  py::arg("baked_items") = r.baked_items, py::arg("symbolic_input_dims") = r.baked_items.empty());
}

}  // namespace

void bind_pipeline(py::module_& m) {
  m.def("check", &check, py::arg("engine"), py::arg("model_path"), py::arg("config"), py::arg("dims"),
        py::arg("samples"), py::arg("edge_cases"), py::arg("edge_dims"), py::arg("save_verdict"), py::arg("progress"));
  m.def("profile", &profile, py::arg("engine"), py::arg("dims"), py::arg("model_path"), py::arg("batch"),
        py::arg("seq"), py::arg("runs"), py::arg("warmup"), py::arg("by_shape"), py::arg("session"),
        py::arg("quick_ceilings"), py::arg("cache_dir"));
  m.def("optimize", &optimize, py::arg("engine"), py::arg("dims"), py::arg("options"), py::arg("path"));
}

}  // namespace fusor::python
