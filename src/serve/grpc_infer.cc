#include "serve/grpc_infer.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "serve/classification.h"
#include "serve/grpc_tensors.h"
#include "serve/kserve_json.h"
#include "serve/status.h"

namespace fusor::serve {

EncoderRequest read_encoder_request(const inference::ModelInferRequest& q) {
  // Each copy of a requested output was answered in full (as over HTTP: json_infer.cc).
  std::set<std::string> requested;
  for (const auto& o : q.outputs())
    if (!requested.insert(o.name()).second)
      throw RequestError{Code::BadRequest, "output '" + o.name() + "' is requested twice"};
  EncoderRequest e;
  for (const GrpcInput& in : grpc_inputs(q)) e.inputs[in.wire.name] = grpc_tensor(in);
  if (auto p = q.parameters().find("class"); p != q.parameters().end()) {
    if (p->second.parameter_choice_case() != inference::InferParameter::kStringParam)
      throw RequestError{Code::BadRequest, "parameter 'class' must be a string"};
    e.cls = p->second.string_param();
  }
  return e;
}

namespace {

// The outputs a request names, each with its class count (0: the tensor).
std::vector<std::pair<std::string, int64_t>> requested_outputs(const inference::ModelInferRequest& q) {
  std::vector<std::pair<std::string, int64_t>> wanted;
  for (const auto& o : q.outputs()) {
    if (o.parameters().count(kSharedMemoryRegion)) throw shared_memory_refused(o.name(), "output");
    int64_t classes = 0;
    if (auto p = o.parameters().find("classification"); p != o.parameters().end()) {
      if (p->second.parameter_choice_case() != inference::InferParameter::kInt64Param || p->second.int64_param() < 0)
        throw RequestError{Code::BadRequest, "output '" + o.name() + "': 'classification' must be a count"};
      classes = p->second.int64_param();
    }
    wanted.emplace_back(o.name(), classes);
  }
  return wanted;
}

}  // namespace

void check_requested_outputs(const ServedModel& m, const inference::ModelInferRequest& q) {
  for (const auto& [name, classes] : requested_outputs(q)) check_requested_output(m.signature(), name, classes);
}

void fill_encoder_response(const ServedModel& m, const inference::ModelInferRequest& q, const Tensors& outputs,
                           inference::ModelInferResponse& r) {
  r.set_model_name(m.name());
  r.set_model_version(kModelVersion);
  r.set_id(q.id());
  std::vector<std::pair<std::string, int64_t>> wanted = requested_outputs(q);
  if (wanted.empty())
    for (const auto& o : m.signature().outputs) wanted.emplace_back(o.name, 0);
  for (const auto& [name, classes] : wanted) {
    auto it = outputs.find(name);
    if (it == outputs.end()) throw RequestError{Code::BadRequest, "unknown output '" + name + "' requested"};
    const Tensor& t = it->second;
    auto* out = r.add_outputs();
    out->set_name(name);
    if (classes > 0) {
      const Classes top = classify(t, classes, m.signature().batched, name);
      out->set_datatype("BYTES");
      for (int64_t d : top.dims) out->add_shape(d);
      r.add_raw_output_contents(bytes_contents(top.items));
      continue;
    }
    out->set_datatype(triton_dtype(t.dtype()));
    for (int64_t d : t.dims()) out->add_shape(d);
    r.add_raw_output_contents(static_cast<const char*>(t.raw()), t.nbytes());
  }
}

}  // namespace fusor::serve
