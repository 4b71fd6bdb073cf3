#include "serve/kserve_json.h"

#include <algorithm>

#include "serve/generation_stats.h"

namespace fusor::serve {
namespace {

using nlohmann::json;

json tensor_metadata(const TensorInfo& t, bool batched) {
  json shape = json::array();
  for (size_t i = 0; i < t.dims.size(); ++i) shape.push_back(batched && i == 0 ? -1 : t.dims[i]);
  return {{"name", t.name}, {"datatype", triton_dtype(t.dtype)}, {"shape", shape}};
}

json duration(uint64_t count, uint64_t ns) { return {{"count", count}, {"ns", ns}}; }

// A KServe datatype's name in Triton's model config: TYPE_ before it, BYTES being TYPE_STRING.
std::string config_type(const std::string& datatype) { return "TYPE_" + (datatype == "BYTES" ? std::string("STRING") : datatype); }

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
    in.push_back({{"name", t.name}, {"data_type", config_type(triton_dtype(t.dtype))}, {"dims", dims(t)}});
  for (const auto& t : m.signature().outputs)
    out.push_back({{"name", t.name}, {"data_type", config_type(triton_dtype(t.dtype))}, {"dims", dims(t)}});
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

const std::vector<GenerateTensor>& generate_inputs() {
  static const std::vector<GenerateTensor> inputs = {
      {"text_input", "BYTES", 1, false},
      {"stream", "BOOL", 1, true},
      {"max_tokens", "INT32", 1, true},
      {"sampling_parameters", "BYTES", 1, true},  // the vLLM backend's: a JSON object of the fields below
      {"exclude_input_in_output", "BOOL", 1, true},
      {"temperature", "FP32", 1, true},
      {"top_p", "FP32", 1, true},
      {"top_k", "INT32", 1, true},
      {"repetition_penalty", "FP32", 1, true},
      {"random_seed", "UINT64", 1, true},
      {"stop_words", "BYTES", -1, true},
      {"ignore_eos", "BOOL", 1, true},
      {"return_finish_reason", "BOOL", 1, true},
      {"return_num_input_tokens", "BOOL", 1, true},
      {"return_num_output_tokens", "BOOL", 1, true},
  };
  return inputs;
}

const std::vector<GenerateTensor>& generate_outputs() {
  static const std::vector<GenerateTensor> outputs = {
      {"text_output", "BYTES", -1, false},
      {"finish_reason", "BYTES", -1, true},
      {"num_input_tokens", "UINT32", 1, true},
      {"num_output_tokens", "UINT32", 1, true},
  };
  return outputs;
}

json generative_metadata(const GenerativeModel& m) {
  auto list = [](const std::vector<GenerateTensor>& ts) {
    json l = json::array();
    for (const GenerateTensor& t : ts) l.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", {t.dims}}});
    return l;
  };
  return {{"name", m.name()}, {"versions", {kModelVersion}}, {"platform", "fusor_onnx"},
          {"inputs", list(generate_inputs())}, {"outputs", list(generate_outputs())}};
}

json generative_config(const GenerativeModel& m) {
  json in = json::array(), out = json::array();
  for (const GenerateTensor& t : generate_inputs())
    in.push_back({{"name", t.name}, {"data_type", config_type(t.datatype)},
                  {"dims", {t.dims}}, {"optional", t.optional}});
  for (const GenerateTensor& t : generate_outputs())
    out.push_back({{"name", t.name}, {"data_type", config_type(t.datatype)},
                   {"dims", {t.dims}}});
  return {{"name", m.name()},
          {"platform", "fusor_onnx"},
          {"backend", "fusor"},
          {"max_batch_size", 0},  // one request per call; the scheduler batches across calls
          {"input", in},
          {"output", out},
          {"model_transaction_policy", {{"decoupled", true}}},
          {"instance_group", {{{"name", m.name()}, {"kind", "KIND_CPU"}, {"count", 1}}}}};
}

namespace {

struct Counted {
  uint64_t count = 0, ns = 0;
};

// Triton's statistics document for one model.
json stats_document(const std::string& name, uint64_t last_inference_ms, uint64_t inferences, uint64_t executions,
                    Counted success, Counted fail, Counted queue, Counted compute, json batches) {
  return {{"name", name},
          {"version", kModelVersion},
          {"last_inference", last_inference_ms},
          {"inference_count", inferences},
          {"execution_count", executions},
          {"inference_stats",
           {{"success", duration(success.count, success.ns)},
            {"fail", duration(fail.count, fail.ns)},
            {"queue", duration(queue.count, queue.ns)},
            {"compute_input", duration(compute.count, 0)},
            {"compute_infer", duration(compute.count, compute.ns)},
            {"compute_output", duration(compute.count, 0)},
            {"cache_hit", duration(0, 0)},
            {"cache_miss", duration(0, 0)}}},
          {"batch_stats", std::move(batches)}};
}

}  // namespace

json model_stats(ServedModel& m) {
  auto s = m.stats().snapshot();
  json batches = json::array();
  for (const auto& [size, b] : s.batches)
    batches.push_back({{"batch_size", size},
                       {"compute_input", duration(b.count, 0)},
                       {"compute_infer", duration(b.count, b.compute_ns)},
                       {"compute_output", duration(b.count, 0)}});
  return stats_document(m.name(), s.last_inference_ms, s.inference_count, s.exec_count, {s.success_count, s.success_ns},
                        {s.fail_count, s.fail_ns}, {s.queue_count, s.queue_ns}, {s.compute_count, s.compute_ns},
                        std::move(batches));
}

json generative_stats(GenerativeModel& m) {
  // A request is one inference; its time past the queue counts as compute (prefill and decode
  // steps shared with other sequences).
  uint64_t finished = 0, failed = 0;
  double e2e_s = 0, queue_s = 0;
  uint64_t queued = 0, last_ms = 0;
  for (const auto& [cls, c] : m.stats().snapshot()) {
    last_ms = std::max(last_ms, c.last_finished_ms);
    for (const auto& [reason, n] : c.finished) finished += n;
    for (const auto& [reason, n] : c.failures) failed += n;
    e2e_s += c.e2e.sum;
    queue_s += c.queue.sum;
    queued += c.queue.count;
  }
  auto ns = [](double s) { return static_cast<uint64_t>(std::max(0.0, s) * 1e9); };
  return stats_document(m.name(), last_ms, finished, finished, {finished, ns(e2e_s)}, {failed, 0}, {queued, ns(queue_s)},
                        {finished, ns(e2e_s - queue_s)}, json::array());
}

}  // namespace fusor::serve
