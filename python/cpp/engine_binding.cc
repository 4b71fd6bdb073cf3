// Engine, Session and their options. Model loading, planning and run() release the GIL, so
// Python threads run sessions concurrently (one Session per thread: a Session is one execution
// context; the Python package keeps a pool of them per shape).
#include <optional>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "fusor/check.h"
#include "fusor/config.h"
#include "fusor/engine.h"
#include "fusor/threads.h"

namespace fusor::python {

namespace {

py::dict tensor_info_dict(const TensorInfo& t) {
  py::dict d;
  d["name"] = t.name;
  d["dtype"] = dtype_name(t.dtype);
  d["dims"] = t.dims;
  d["symbols"] = t.symbols;
  d["has_shape"] = t.has_shape;
  return d;
}

py::list tensor_infos(const std::vector<TensorInfo>& infos) {
  py::list out;
  for (const TensorInfo& t : infos) out.append(tensor_info_dict(t));
  return out;
}

py::dict run_session(Session& session, const py::dict& feeds) {
  auto inputs = tensor_views(feeds, "input");
  std::map<std::string, Tensor> outputs;
  {
    py::gil_scoped_release release;
    outputs = session.run(inputs);
  }
  py::dict out;
  for (const auto& [name, t] : outputs) out[py::str(name)] = to_numpy(t);
  return out;
}

// Outputs named in `outputs` whose array has the output's dtype and shape are written in place;
// the returned dict holds every output (those arrays themselves where written in place).
py::dict run_session_into(Session& session, const py::dict& feeds, const py::dict& outputs) {
  auto inputs = tensor_views(feeds, "input");
  for (const auto& [key, value] : outputs) {
    // A list is not an array: borrowing it as one read a list object's fields as an array's.
    if (!py::isinstance<py::array>(value))
      throw Error("output '" + py::cast<std::string>(key) + "' must be bound to a numpy array", ErrorKind::InvalidArgument);
    const auto array = py::reinterpret_borrow<py::array>(value);
    if (!array.writeable())
      throw Error("output '" + py::cast<std::string>(key) + "' is bound to a read-only array", ErrorKind::InvalidArgument);
  }
  auto bound = tensor_views(outputs, "output");
  {
    py::gil_scoped_release release;
    session.run_into(inputs, bound);
  }
  py::dict out;
  for (const auto& [name, t] : bound) {
    py::str key(name);
    const bool in_place = outputs.contains(key) && t.raw() == py::reinterpret_borrow<py::array>(outputs[key]).data();
    out[key] = in_place ? py::object(outputs[key]) : py::object(to_numpy(t));
  }
  return out;
}

}  // namespace

void bind_engine(py::module_& m) {
  py::class_<FusionConfig>(m, "FusionConfig")
      .def(py::init<>())
      .def_readwrite("disabled", &FusionConfig::disabled)
      .def_property_readonly("precision_check",
                             [](const FusionConfig& f) { return std::string(precision_check_name(f.precision_check)); })
      .def("switches", [](const FusionConfig& f) {
        std::map<std::string, bool> out;
        for (const FusionSwitch& s : kFusionSwitches) out[std::string(s.key)] = f.*(s.member);
        return out;
      });

  py::class_<Config>(m, "Config")
      .def(py::init<>())
      .def_readonly("fusion", &Config::fusion)
      .def_readonly("mem_reuse", &Config::mem_reuse)
      .def_property_readonly("reorder_for_coalesce", [](const Config& c) { return c.kernel.reorder_for_coalesce; })
      .def("yaml", [](const Config& c) { return config_yaml(c); });
  m.def("load_config", &load_config, py::arg("path"));
  m.def("parse_config", &parse_config, py::arg("yaml_text"), py::arg("source_name"));

  py::class_<SessionOptions>(m, "SessionOptions")
      .def(py::init<>())
      // What the CLI's flags and --config make (tools/fusor/model_args.cc): a switch is on only
      // when both the config and the caller leave it on.
      .def(py::init([](const Config& config, bool fusion, bool reorder, bool mem_reuse, bool reference) {
             SessionOptions o;
             o.reference = reference;
             o.mem_reuse = config.mem_reuse && mem_reuse;
             o.reorder = config.kernel.reorder_for_coalesce && reorder;
             if (fusion) o.fusion = config.fusion;
             else o.fusion.reset();
             return o;
           }),
           py::arg("config"), py::arg("fusion") = true, py::arg("reorder") = true, py::arg("mem_reuse") = true,
           py::arg("reference") = false)
      .def_readwrite("reference", &SessionOptions::reference)
      .def_readwrite("mem_reuse", &SessionOptions::mem_reuse)
      .def_readwrite("mem_guard", &SessionOptions::mem_guard)
      .def_readwrite("reorder", &SessionOptions::reorder)
      .def_readwrite("fusion", &SessionOptions::fusion);

  py::class_<Session>(m, "Session")
      .def("run", &run_session, py::arg("feeds"), "{name: C-contiguous array} -> {output name: array}")
      .def("run_into", &run_session_into, py::arg("feeds"), py::arg("outputs"))
      .def("kernels_per_inference", &Session::kernels_per_inference)
      .def("memory",
           [](const Session& s) {
             auto m = s.memory();
             return py::dict(py::arg("arena_bytes") = m.arena_bytes, py::arg("lower_bound_bytes") = m.lower_bound_bytes,
                             py::arg("naive_bytes") = m.naive_bytes, py::arg("weights_bytes") = m.weights_bytes);
           })
      .def("fusion_items", [](const Session& s) {
        py::list out;
        for (const FusionItemInfo& i : s.fusion_items())
          out.append(py::dict(py::arg("name") = i.name, py::arg("kind") = i.kind, py::arg("pass") = i.pass));
        return out;
      });

  py::class_<Engine>(m, "Engine")
      .def_static("load", &Engine::load, py::arg("path"), py::call_guard<py::gil_scoped_release>())
      .def_static(
          "load_bytes",
          [](const py::bytes& bytes, const std::string& base_dir) {
            std::string data = bytes;
            py::gil_scoped_release release;
            return Engine::load_bytes(data, base_dir);
          },
          py::arg("bytes"), py::arg("base_dir") = "")
      .def("inputs", [](const Engine& e) { return tensor_infos(e.inputs()); })
      .def("outputs", [](const Engine& e) { return tensor_infos(e.outputs()); })
      .def("node_count", &Engine::node_count)
      .def("bind_dims", &Engine::bind_dims, py::arg("shapes"), py::arg("batch") = 1, py::arg("seq") = 128)
      .def("session", &Engine::session, py::arg("input_dims"), py::arg("options") = SessionOptions{},
           py::call_guard<py::gil_scoped_release>())
      .def(
          "sample_inputs",
          [](const Engine& e, const std::map<std::string, Dims>& dims, uint64_t seed) {
            py::dict out;
            for (const auto& [name, t] : e.sample_inputs(dims, seed)) out[py::str(name)] = to_numpy(t);
            return out;
          },
          py::arg("input_dims"), py::arg("seed") = 0);

  // The precision gate's saved verdict for a model file joins fusion.disabled, as in fusor run.
  // Bound after Engine, so that its signature names fusor._fusor.Engine.
  m.def(
      "apply_precision_verdict",
      [](const Engine& engine, const std::string& model_path, SessionOptions& options, bool gate_if_missing) {
        if (!options.fusion || options.reference) return;
        py::gil_scoped_release release;
        apply_precision_verdict(engine, model_path, *options.fusion, gate_if_missing,
                                [](const std::string& line) { std::fprintf(stderr, "check: %s\n", line.c_str()); });
      },
      py::arg("engine"), py::arg("model_path"), py::arg("options"), py::arg("gate_if_missing") = false);

  m.def("compute_threads", &compute_threads);
  m.def("set_compute_threads", &set_compute_threads, py::arg("n"));
}

}  // namespace fusor::python
