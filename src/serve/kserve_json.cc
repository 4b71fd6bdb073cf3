#include "serve/kserve_json.h"

namespace fusor::serve {
namespace {

using nlohmann::json;

json tensor_metadata(const TensorInfo& t, bool batched) {
  json shape = json::array();
  for (size_t i = 0; i < t.dims.size(); ++i) shape.push_back(batched && i == 0 ? -1 : t.dims[i]);
  return {{"name", t.name}, {"datatype", triton_dtype(t.dtype)}, {"shape", shape}};
}

json duration(uint64_t count, uint64_t ns) { return {{"count", count}, {"ns", ns}}; }

}  // namespace

std::string error_body(const std::string& message) { return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace); }

json server_metadata() { return {{"name", "fusor"}, {"version", kServerVersion}, {"extensions", kExtensions}}; }

json model_metadata(ServedModel& m) {
  json in = json::array(), out = json::array();
  for (const auto& t : m.signature().inputs) in.push_back(tensor_metadata(t, m.signature().batched));
  for (const auto& t : m.signature().outputs) out.push_back(tensor_metadata(t, m.signature().batched));
  return {{"name", m.name()}, {"versions", {kModelVersion}}, {"platform", "fusor_onnx"}, {"inputs", in}, {"outputs", out}};
}

json model_config(ServedModel& m) {
  bool batched = m.signature().batched;
  auto dims = [&](const TensorInfo& t) {
    json d = json::array();
    for (size_t i = batched ? 1 : 0; i < t.dims.size(); ++i) d.push_back(t.dims[i]);
    return d;
  };
  json in = json::array(), out = json::array();
  for (const auto& t : m.signature().inputs)
    in.push_back({{"name", t.name}, {"data_type", std::string("TYPE_") + triton_dtype(t.dtype)}, {"dims", dims(t)}});
  for (const auto& t : m.signature().outputs)
    out.push_back({{"name", t.name}, {"data_type", std::string("TYPE_") + triton_dtype(t.dtype)}, {"dims", dims(t)}});
  const TrafficClass& d = m.config().classes.at(m.config().default_class);
  json j = {{"name", m.name()},
            {"platform", "fusor_onnx"},
            {"backend", "fusor"},
            {"max_batch_size", m.max_batch()},
            {"input", in},
            {"output", out},
            {"instance_group", {{{"name", m.name()}, {"kind", "KIND_CPU"}, {"count", m.contexts()}}}}};
  if (batched)
    j["dynamic_batching"] = {{"preferred_batch_size", d.preferred_batch_sizes},
                             {"max_queue_delay_microseconds", static_cast<uint64_t>(d.batch_window_ms * 1000)}};
  return j;
}

json model_stats(ServedModel& m) {
  auto s = m.stats().snapshot();
  json batches = json::array();
  for (const auto& [size, b] : s.batches)
    batches.push_back({{"batch_size", size},
                       {"compute_input", duration(b.count, 0)},
                       {"compute_infer", duration(b.count, b.compute_ns)},
                       {"compute_output", duration(b.count, 0)}});
  return {{"name", m.name()},
          {"version", kModelVersion},
          {"last_inference", s.last_inference_ms},
          {"inference_count", s.inference_count},
          {"execution_count", s.exec_count},
          {"inference_stats",
           {{"success", duration(s.success_count, s.success_ns)},
            {"fail", duration(s.fail_count, s.fail_ns)},
            {"queue", duration(s.queue_count, s.queue_ns)},
            {"compute_input", duration(s.compute_count, 0)},
            {"compute_infer", duration(s.compute_count, s.compute_ns)},
            {"compute_output", duration(s.compute_count, 0)},
            {"cache_hit", duration(0, 0)},
            {"cache_miss", duration(0, 0)}}},
          {"batch_stats", batches}};
}

}  // namespace fusor::serve
