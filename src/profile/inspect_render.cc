// The inspection as text for a terminal and as one JSON object for scripts.
#include <nlohmann/json.hpp>

#include <cstdio>
#include <sstream>

#include "fusor/inspect.h"

namespace fusor {
namespace {

std::string dims_text(const std::vector<std::string>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + dims[i];
  return s + "]";
}

std::string scaled(double v, const char* const* units, double step) {
  int u = 0;
  while (v >= step && units[u + 1]) v /= step, ++u;
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", v, units[u]);
  return buf;
}

std::string op_label(const InspectedOp& op) { return (op.domain.empty() ? "" : op.domain + ":") + op.op_type; }

}  // namespace

std::string inspection_text(const ModelInspection& in) {
  std::ostringstream s;
  static const char* kCount[] = {"", "K", "M", "G", "T", nullptr};
  static const char* kBytes[] = {"B", "KiB", "MiB", "GiB", nullptr};
  static const char* kFlops[] = {"FLOP", "KFLOP", "MFLOP", "GFLOP", "TFLOP", nullptr};
  s << in.model << "  (ONNX IR " << in.ir_version << (in.producer.empty() ? "" : ", from " + in.producer) << ")\n";
  s << "opsets:";
  for (const auto& [domain, v] : in.opsets) s << " " << domain << " " << v;
  s << "\n";
  for (const auto* list : {&in.inputs, &in.outputs}) {
    s << (list == &in.inputs ? "inputs:\n" : "outputs:\n");
    for (const auto& t : *list) s << "  " << t.name << "  " << t.dtype << " " << dims_text(t.dims) << "\n";
  }
  s << "ops: " << in.ops.size() << " types, " << in.nodes << " nodes\n";
  for (const auto& op : in.ops) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-32s %6d  ", op_label(op).c_str(), op.count);
    s << line << (op.unsupported.empty() ? "supported" : "UNSUPPORTED: " + op.unsupported + " (first at node '" + op.first_node + "')")
      << "\n";
  }
  s << "parameters: " << scaled(static_cast<double>(in.parameters), kCount, 1000) << " ("
    << scaled(static_cast<double>(in.parameter_bytes), kBytes, 1024) << ")\n";
  if (!in.not_bound.empty()) {
    s << "not planned: " << in.not_bound << "\n";
  } else {
    s << "at";
    for (const auto& [name, d] : in.bound_dims) {
      s << " " << name << "=[";
      for (size_t i = 0; i < d.size(); ++i) s << (i ? "," : "") << d[i];
      s << "]";
    }
    s << ":\n  FLOPs per inference: " << scaled(in.flops, kFlops, 1000) << "\n";
    s << "  would fuse: " << in.fusions.size() << " items\n";
    std::map<std::string, int> kinds;
    for (const auto& f : in.fusions) ++kinds[f.kind + " (" + f.pass + ")"];
    for (const auto& [kind, n] : kinds) s << "    " << n << " x " << kind << "\n";
    if (!in.not_fused.empty()) s << "  declined: " << in.not_fused.size() << " (fusor profile lists them)\n";
  }
  s << (!in.supported             ? "some ops are not supported\n"
        : in.not_bound.empty()      ? "every op is supported\n"
                                    : "every op is supported, but the model is not planned at these dims (above)\n");
  return s.str();
}

std::string inspection_json(const ModelInspection& in) {
  using nlohmann::json;
  auto tensors = [](const std::vector<InspectedTensor>& list) {
    json a = json::array();
    for (const auto& t : list) a.push_back({{"name", t.name}, {"dtype", t.dtype}, {"dims", t.dims}});
    return a;
  };
  json ops = json::array();
  for (const auto& op : in.ops)
    ops.push_back({{"domain", op.domain.empty() ? "ai.onnx" : op.domain}, {"op_type", op.op_type}, {"count", op.count},
                   {"first_node", op.first_node}, {"supported", op.unsupported.empty()},
                   {"reason", op.unsupported}});
  json j = {{"model", in.model},
            {"ir_version", in.ir_version},
            {"producer", in.producer},
            {"opsets", in.opsets},
            {"inputs", tensors(in.inputs)},
            {"outputs", tensors(in.outputs)},
            {"ops", ops},
            {"nodes", in.nodes},
            {"parameters", in.parameters},
            {"parameter_bytes", in.parameter_bytes},
            {"supported", in.supported}};
  if (!in.not_bound.empty()) {
    j["not_planned"] = in.not_bound;
  } else {
    json fusions = json::array();
    for (const auto& f : in.fusions)
      fusions.push_back({{"name", f.name}, {"kind", f.kind}, {"pass", f.pass}, {"nodes", f.nodes}});
    j["bound_dims"] = in.bound_dims;
    j["flops"] = in.flops;
    j["fusion_items"] = fusions;
    j["not_fused"] = in.not_fused;
  }
  return j.dump(2);
}

}  // namespace fusor
