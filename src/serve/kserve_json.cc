#include "serve/kserve_json.h"

#include <cstring>

#include "serve/tensor_codec.h"

namespace fusor::serve {
namespace {

using nlohmann::json;

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

// Flattens nested "data" arrays (row-major), bounded in depth.
template <class V, class Get>
void flatten(const json& j, std::vector<V>& out, int depth, const std::string& name, Get get) {
  if (depth > 32) throw bad("input '" + name + "' data is nested too deeply");
  if (j.is_array()) {
    for (const auto& x : j) flatten(x, out, depth + 1, name, get);
  } else {
    out.push_back(get(j));
  }
}

Tensor json_tensor(const WireTensor& w, const json& data) {
  auto wrong = [&] { return bad("input '" + w.name + "' data holds a value that is not " + w.datatype); };
  if (w.datatype == "INT64" || w.datatype == "INT32" || w.datatype == "INT8" || w.datatype == "UINT8") {
    std::vector<int64_t> v;
    flatten(data, v, 0, w.name, [&](const json& x) -> int64_t {
      if (!x.is_number_integer()) throw wrong();
      return x.is_number_unsigned() ? static_cast<int64_t>(x.get<uint64_t>()) : x.get<int64_t>();
    });
    return from_int64s(w, v);
  }
  std::vector<double> v;
  flatten(data, v, 0, w.name, [&](const json& x) -> double {
    if (w.datatype == "BOOL") {
      if (!x.is_boolean()) throw wrong();
      return x.get<bool>() ? 1 : 0;
    }
    if (!x.is_number()) throw wrong();
    return x.get<double>();
  });
  return from_doubles(w, v);
}

std::string string_field(const json& j, const char* key, const std::string& what) {
  auto it = j.find(key);
  if (it == j.end()) return "";
  if (!it->is_string()) throw bad(what + " '" + key + "' must be a string");
  return it->get<std::string>();
}

json tensor_values(const Tensor& t) {
  json a = json::array();
  auto put = [&](auto* p) {
    for (int64_t i = 0; i < t.numel(); ++i) a.push_back(p[i]);
  };
  switch (t.dtype()) {
    case DType::Float32: put(static_cast<const float*>(t.raw())); break;
    case DType::Float64: put(static_cast<const double*>(t.raw())); break;
    case DType::Int64: put(static_cast<const int64_t*>(t.raw())); break;
    case DType::Int32: put(static_cast<const int32_t*>(t.raw())); break;
    case DType::Int8: put(static_cast<const int8_t*>(t.raw())); break;
    case DType::UInt8: put(static_cast<const uint8_t*>(t.raw())); break;
    case DType::Bool: put(static_cast<const bool*>(t.raw())); break;
    case DType::Undefined: break;
  }
  return a;
}

json tensor_metadata(const TensorInfo& t, bool batched) {
  json shape = json::array();
  for (size_t i = 0; i < t.dims.size(); ++i) shape.push_back(batched && i == 0 ? -1 : t.dims[i]);
  return {{"name", t.name}, {"datatype", triton_dtype(t.dtype)}, {"shape", shape}};
}

json duration(uint64_t count, uint64_t ns) { return {{"count", count}, {"ns", ns}}; }

}  // namespace

std::string error_body(const std::string& message) { return json{{"error", message}}.dump(-1, ' ', false, json::error_handler_t::replace); }

HttpInferRequest parse_infer_request(const std::string& body, std::optional<size_t> header_length) {
  size_t json_len = header_length.value_or(body.size());
  if (json_len > body.size())
    throw bad("Inference-Header-Content-Length " + std::to_string(json_len) + " exceeds the body's " +
              std::to_string(body.size()) + " bytes");
  json j = json::parse(body.begin(), body.begin() + static_cast<std::ptrdiff_t>(json_len), nullptr, false);
  if (j.is_discarded()) throw bad("malformed JSON in the request body");
  if (!j.is_object()) throw bad("the request body must be a JSON object");
  HttpInferRequest r;
  r.id = string_field(j, "id", "request");
  if (auto p = j.find("parameters"); p != j.end()) {
    if (!p->is_object()) throw bad("request 'parameters' must be an object");
    r.cls = string_field(*p, "class", "parameter");
    if (auto b = p->find("binary_data_output"); b != p->end() && b->is_boolean()) r.binary_default = b->get<bool>();
  }
  auto inputs = j.find("inputs");
  if (inputs == j.end() || !inputs->is_array()) throw bad("the request must have an 'inputs' array");
  size_t offset = json_len;  // binary data follows the JSON, in input order
  for (const json& in : *inputs) {
    if (!in.is_object()) throw bad("each of 'inputs' must be an object");
    WireTensor w{string_field(in, "name", "input"), string_field(in, "datatype", "input"), {}};
    if (w.name.empty()) throw bad("an input has no 'name'");
    auto shape = in.find("shape");
    if (shape == in.end() || !shape->is_array()) throw bad("input '" + w.name + "' has no 'shape' array");
    for (const json& d : *shape) {
      if (!d.is_number_integer()) throw bad("input '" + w.name + "' shape must hold integers");
      w.shape.push_back(d.get<int64_t>());
    }
    if (r.inputs.count(w.name)) throw bad("input '" + w.name + "' is given twice");
    std::optional<size_t> binary_size;
    if (auto p = in.find("parameters"); p != in.end() && p->is_object())
      if (auto b = p->find("binary_data_size"); b != p->end()) {
        if (!b->is_number_unsigned()) throw bad("input '" + w.name + "' binary_data_size must be a non-negative integer");
        binary_size = b->get<uint64_t>();
      }
    if (binary_size) {
      if (*binary_size > body.size() - offset)
        throw bad("input '" + w.name + "' binary_data_size " + std::to_string(*binary_size) + " runs past the body");
      r.inputs[w.name] = from_raw(w, body.data() + offset, *binary_size);
      offset += *binary_size;
    } else {
      auto data = in.find("data");
      if (data == in.end()) throw bad("input '" + w.name + "' has neither 'data' nor binary_data_size");
      r.inputs[w.name] = json_tensor(w, *data);
    }
  }
  if (offset != body.size()) throw bad("the body has " + std::to_string(body.size() - offset) + " bytes of binary data no input claims");
  if (auto outs = j.find("outputs"); outs != j.end()) {
    if (!outs->is_array()) throw bad("request 'outputs' must be an array");
    for (const json& o : *outs) {
      if (!o.is_object()) throw bad("each of 'outputs' must be an object");
      bool binary = r.binary_default;
      if (auto p = o.find("parameters"); p != o.end() && p->is_object())
        if (auto b = p->find("binary_data"); b != p->end() && b->is_boolean()) binary = b->get<bool>();
      r.outputs.emplace_back(string_field(o, "name", "output"), binary);
    }
  }
  return r;
}

HttpBody infer_response(const std::string& model, const HttpInferRequest& req, const Signature& sig,
                        const Tensors& outputs) {
  std::vector<std::pair<std::string, bool>> wanted = req.outputs;
  if (wanted.empty())
    for (const auto& o : sig.outputs) wanted.emplace_back(o.name, req.binary_default);
  json outs = json::array();
  std::string binary;
  for (const auto& [name, as_binary] : wanted) {
    auto it = outputs.find(name);
    if (it == outputs.end()) throw bad("unknown output '" + name + "' requested");
    const Tensor& t = it->second;
    json o = {{"name", name}, {"datatype", triton_dtype(t.dtype())}, {"shape", t.dims()}};
    if (as_binary) {
      o["parameters"] = {{"binary_data_size", t.nbytes()}};
      binary.append(static_cast<const char*>(t.raw()), t.nbytes());
    } else {
      o["data"] = tensor_values(t);
    }
    outs.push_back(std::move(o));
  }
  json j = {{"model_name", model}, {"model_version", kModelVersion}, {"outputs", outs}};
  if (!req.id.empty()) j["id"] = req.id;
  HttpBody b{j.dump(-1, ' ', false, json::error_handler_t::replace), std::nullopt};
  if (!binary.empty()) {
    b.header_length = b.body.size();
    b.body += binary;
  }
  return b;
}

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
