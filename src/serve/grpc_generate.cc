#include "serve/grpc_generate.h"

#include <algorithm>

#include "serve/grpc_tensors.h"
#include "serve/kserve_json.h"
#include "serve/openai_response.h"
#include "serve/request_fields.h"
#include "serve/status.h"

namespace fusor::serve {
namespace {

RequestError bad(const std::string& m) { return {Code::BadRequest, m}; }

const GenerateTensor& declared_input(const std::string& name) {
  const auto& all = generate_inputs();
  auto it = std::find_if(all.begin(), all.end(), [&](const GenerateTensor& t) { return name == t.name; });
  if (it != all.end()) return *it;
  std::string names;
  for (const GenerateTensor& t : all) names += (names.empty() ? "" : ", ") + std::string(t.name);
  throw bad("a generative model has no input '" + name + "'; it takes " + names);
}

// One element as JSON: a bool, an integer or a real, whatever the wire's numeric type.
nlohmann::json element(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::Bool: return t.data<bool>()[i];
    case DType::Int64: return t.data<int64_t>()[i];
    case DType::UInt64: return t.data<uint64_t>()[i];
    case DType::Float32:
    case DType::Float64:
    case DType::Float16:
    case DType::BFloat16: return t.scalar_as_double(i);
    default: return static_cast<int64_t>(t.scalar_as_double(i));  // the narrower integers: exact
  }
}

nlohmann::json input_value(const GrpcInput& in, const GenerateTensor& declared) {
  const bool bytes = declared.datatype == std::string("BYTES");
  if (bytes != (in.wire.datatype == "BYTES"))
    throw bad("input '" + in.wire.name + "' must be " + (bytes ? "BYTES" : "a number or BOOL") + ", not " + in.wire.datatype);
  nlohmann::json values = nlohmann::json::array();
  if (bytes) {
    for (std::string& s : grpc_bytes(in)) values.push_back(std::move(s));
  } else {
    const Tensor t = grpc_tensor(in);
    for (int64_t i = 0; i < t.numel(); ++i) values.push_back(element(t, i));
  }
  if (declared.dims == -1) return values;
  if (values.size() != 1)
    throw bad("input '" + in.wire.name + "' holds " + std::to_string(values.size()) +
              " values; it takes one (one request generates one text)");
  return values[0];
}

nlohmann::json parameter_value(const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam: return p.bool_param();
    case inference::InferParameter::kInt64Param: return p.int64_param();
    case inference::InferParameter::kUint64Param: return p.uint64_param();
    case inference::InferParameter::kDoubleParam: return p.double_param();
    case inference::InferParameter::kStringParam: return p.string_param();
    default: return nullptr;
  }
}

}  // namespace

nlohmann::json generate_body(const inference::ModelInferRequest& q) {
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [name, p] : q.parameters()) params[name] = parameter_value(p);
  nlohmann::json body = nlohmann::json::object();
  for (const GrpcInput& in : grpc_inputs(q)) body[in.wire.name] = input_value(in, declared_input(in.wire.name));
  if (auto s = body.find("sampling_parameters"); s != body.end()) {
    nlohmann::json sampling;
    try {
      sampling = parse_json_object(s->get<std::string>());
    } catch (const FieldError& e) {
      throw bad("input 'sampling_parameters': " + e.message);
    }
    for (auto it = sampling.begin(); it != sampling.end(); ++it) params[it.key()] = it.value();
    body.erase(s);
  }
  body["parameters"] = std::move(params);
  if (!q.id().empty()) body["id"] = q.id();
  return body;
}

TensorGenerateRequest read_generate_request(const inference::ModelInferRequest& q, const GenerationTarget& target) {
  const nlohmann::json body = generate_body(q);
  TensorGenerateRequest r;
  try {
    r.request = parse_triton_generate(body, target);
    const nlohmann::json& params = body["parameters"];
    const nlohmann::json* stream = body.contains("stream") ? &body["stream"] : nullptr;
    if (!stream && params.contains("stream")) stream = &params["stream"];
    r.stream = stream && stream->is_boolean() && stream->get<bool>();
  } catch (const FieldError& e) {
    throw RequestError{e.code, e.message};
  }
  r.prompt_tokens = static_cast<int64_t>(r.request.generation.prompt.size());
  return r;
}

GenerateResponses::GenerateResponses(std::string model, const inference::ModelInferRequest& q, TensorGenerateRequest r)
    : model_(std::move(model)), id_(q.id()), r_(std::move(r)) {
  const auto& outputs = generate_outputs();
  for (const auto& o : q.outputs()) {
    if (std::none_of(outputs.begin(), outputs.end(), [&](const GenerateTensor& t) { return o.name() == t.name; }))
      throw bad("unknown output '" + o.name() + "' requested");
    requested_.push_back(o.name());
  }
}

bool GenerateResponses::wanted(const std::string& output) const {
  return requested_.empty() || std::find(requested_.begin(), requested_.end(), output) != requested_.end();
}

inference::ModelInferResponse GenerateResponses::response(bool on_stream, bool final) const {
  inference::ModelInferResponse r;
  r.set_model_name(model_);
  r.set_model_version(kModelVersion);
  r.set_id(id_);
  if (on_stream) (*r.mutable_parameters())["triton_final_response"].set_bool_param(final);
  return r;
}

namespace {

void add_output(inference::ModelInferResponse& r, const char* name, const char* datatype, std::string raw) {
  auto* out = r.add_outputs();
  out->set_name(name);
  out->set_datatype(datatype);
  out->add_shape(1);
  r.add_raw_output_contents(std::move(raw));
}

std::string uint32_le(int64_t v) {
  const auto n = static_cast<uint32_t>(v);
  return {static_cast<char>(n), static_cast<char>(n >> 8), static_cast<char>(n >> 16), static_cast<char>(n >> 24)};
}

}  // namespace

inference::ModelInferResponse GenerateResponses::piece(const std::string& text, bool on_stream, bool final) const {
  inference::ModelInferResponse r = response(on_stream, final);
  if (wanted("text_output")) add_output(r, "text_output", "BYTES", bytes_contents({text}));
  return r;
}

bool GenerateResponses::has_final_outputs() const {
  const TritonGenerateRequest& q = r_.request;
  return (q.return_finish_reason && wanted("finish_reason")) || (q.return_num_input_tokens && wanted("num_input_tokens")) ||
         (q.return_num_output_tokens && wanted("num_output_tokens"));
}

inference::ModelInferResponse GenerateResponses::last(const std::string& text, const GenerationOutcome& o,
                                                      bool on_stream) const {
  inference::ModelInferResponse r = response(on_stream, true);
  if (wanted("text_output") && (!on_stream || !text.empty())) add_output(r, "text_output", "BYTES", bytes_contents({text}));
  const TritonGenerateRequest& q = r_.request;
  if (q.return_finish_reason && wanted("finish_reason"))
    add_output(r, "finish_reason", "BYTES", bytes_contents({openai_finish_reason(o)}));
  if (q.return_num_input_tokens && wanted("num_input_tokens"))
    add_output(r, "num_input_tokens", "UINT32", uint32_le(r_.prompt_tokens));
  if (q.return_num_output_tokens && wanted("num_output_tokens"))
    add_output(r, "num_output_tokens", "UINT32", uint32_le(static_cast<int64_t>(o.result.output_ids.size())));
  return r;
}

}  // namespace fusor::serve
