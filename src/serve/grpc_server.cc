#include "serve/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include "fusor/error.h"
#include "kserve.grpc.pb.h"
#include "serve/classification.h"
#include "serve/kserve_json.h"
#include "serve/listen_sockets.h"
#include "serve/tensor_codec.h"

namespace fusor::serve {
namespace {

grpc::Status to_grpc(Code code, const std::string& message) {
  return {static_cast<grpc::StatusCode>(grpc_status(code)), message};
}

// Typed `contents` values -> tensor, for clients that do not send raw_input_contents. Read in
// place from the message's repeated field.
Tensor from_contents(const WireTensor& w, const inference::InferTensorContents& c) {
  auto values = [&](const auto& field) { return from_values(w, std::span(field.data(), field.size())); };
  if (w.datatype == "FP32") return values(c.fp32_contents());
  if (w.datatype == "FP64") return values(c.fp64_contents());
  if (w.datatype == "INT64") return values(c.int64_contents());
  if (w.datatype == "INT32" || w.datatype == "INT16" || w.datatype == "INT8") return values(c.int_contents());
  if (w.datatype == "UINT32" || w.datatype == "UINT16" || w.datatype == "UINT8") return values(c.uint_contents());
  if (w.datatype == "UINT64") return values(c.uint64_contents());
  if (w.datatype == "BOOL") return values(c.bool_contents());
  if (w.datatype == "FP16" || w.datatype == "BF16")
    throw RequestError{Code::BadRequest, "input '" + w.name + "' is " + w.datatype +
                                             ": KServe has no typed contents for it, send raw_input_contents"};
  return allocate(w, 0);  // throws for the unsupported datatype
}

void fill_tensor_metadata(inference::ModelMetadataResponse::TensorMetadata* t, const TensorInfo& info, bool batched) {
  t->set_name(info.name);
  t->set_datatype(triton_dtype(info.dtype));
  for (size_t i = 0; i < info.dims.size(); ++i) t->add_shape(batched && i == 0 ? -1 : info.dims[i]);
}

void fill_duration(inference::StatisticDuration* d, const nlohmann::json& j) {
  d->set_count(j["count"].get<uint64_t>());
  d->set_ns(j["ns"].get<uint64_t>());
}

}  // namespace

class GrpcService final : public inference::GRPCInferenceService::Service {
 public:
  explicit GrpcService(Models& models) : models_(models) {}

  grpc::Status ServerLive(grpc::ServerContext*, const inference::ServerLiveRequest*,
                          inference::ServerLiveResponse* r) override {
    r->set_live(true);
    return grpc::Status::OK;
  }
  grpc::Status ServerReady(grpc::ServerContext*, const inference::ServerReadyRequest*,
                           inference::ServerReadyResponse* r) override {
    r->set_ready(models_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ModelReady(grpc::ServerContext*, const inference::ModelReadyRequest* q,
                          inference::ModelReadyResponse* r) override {
    // As Triton answers: an unknown model or version is not ready (tritonclient's is_model_ready
    // then returns False instead of raising).
    const bool known = models_.find(q->name()) && (q->version().empty() || q->version() == kModelVersion);
    r->set_ready(known && models_.ready());
    return grpc::Status::OK;
  }
  grpc::Status ServerMetadata(grpc::ServerContext*, const inference::ServerMetadataRequest*,
                              inference::ServerMetadataResponse* r) override {
    r->set_name("fusor");
    r->set_version(kServerVersion);
    for (const auto& e : kExtensions) r->add_extensions(e);
    return grpc::Status::OK;
  }
  grpc::Status ModelMetadata(grpc::ServerContext*, const inference::ModelMetadataRequest* q,
                             inference::ModelMetadataResponse* r) override {
    return guarded([&] {
      ServedModel& m = model(q->name(), q->version());
      r->set_name(m.name());
      r->add_versions(kModelVersion);
      r->set_platform("fusor_onnx");
      for (const auto& t : m.signature().inputs) fill_tensor_metadata(r->add_inputs(), t, m.signature().batched);
      for (const auto& t : m.signature().outputs) fill_tensor_metadata(r->add_outputs(), t, m.signature().batched);
    });
  }
  grpc::Status ModelConfig(grpc::ServerContext*, const inference::ModelConfigRequest* q,
                           inference::ModelConfigResponse* r) override {
    return guarded([&] {
      ServedModel& m = model(q->name(), q->version());
      nlohmann::json j = model_config(m);  // one source for both protocols
      auto* c = r->mutable_config();
      c->set_name(j["name"]);
      c->set_platform(j["platform"]);
      c->set_backend(j["backend"]);
      c->set_max_batch_size(j["max_batch_size"].get<int>());
      auto dtype = [](const nlohmann::json& t) {
        inference::DataType d;
        inference::DataType_Parse(t["data_type"].get<std::string>(), &d);
        return d;
      };
      for (const auto& t : j["input"]) {
        auto* in = c->add_input();
        in->set_name(t["name"]);
        in->set_data_type(dtype(t));
        for (int64_t d : t["dims"]) in->add_dims(d);
      }
      for (const auto& t : j["output"]) {
        auto* out = c->add_output();
        out->set_name(t["name"]);
        out->set_data_type(dtype(t));
        for (int64_t d : t["dims"]) out->add_dims(d);
      }
      auto* g = c->add_instance_group();
      g->set_name(m.name());
      g->set_kind(inference::ModelInstanceGroup::KIND_CPU);
      g->set_count(static_cast<int>(m.contexts()));
      if (j.contains("dynamic_batching")) {
        auto* b = c->mutable_dynamic_batching();
        for (int64_t p : j["dynamic_batching"]["preferred_batch_size"]) b->add_preferred_batch_size(static_cast<int>(p));
        b->set_max_queue_delay_microseconds(j["dynamic_batching"]["max_queue_delay_microseconds"]);
      }
    });
  }
  grpc::Status ModelStatistics(grpc::ServerContext*, const inference::ModelStatisticsRequest* q,
                               inference::ModelStatisticsResponse* r) override {
    return guarded([&] {
      std::vector<ServedModel*> ms = q->name().empty() ? models_.all() : std::vector{&model(q->name(), q->version())};
      for (ServedModel* m : ms) {
        nlohmann::json j = model_stats(*m);
        auto* s = r->add_model_stats();
        s->set_name(m->name());
        s->set_version(kModelVersion);
        s->set_last_inference(j["last_inference"]);
        s->set_inference_count(j["inference_count"]);
        s->set_execution_count(j["execution_count"]);
        auto* is = s->mutable_inference_stats();
        const auto& st = j["inference_stats"];
        fill_duration(is->mutable_success(), st["success"]);
        fill_duration(is->mutable_fail(), st["fail"]);
        fill_duration(is->mutable_queue(), st["queue"]);
        fill_duration(is->mutable_compute_input(), st["compute_input"]);
        fill_duration(is->mutable_compute_infer(), st["compute_infer"]);
        fill_duration(is->mutable_compute_output(), st["compute_output"]);
        for (const auto& b : j["batch_stats"]) {
          auto* bs = s->add_batch_stats();
          bs->set_batch_size(b["batch_size"]);
          fill_duration(bs->mutable_compute_input(), b["compute_input"]);
          fill_duration(bs->mutable_compute_infer(), b["compute_infer"]);
          fill_duration(bs->mutable_compute_output(), b["compute_output"]);
        }
      }
    });
  }
  grpc::Status ModelInfer(grpc::ServerContext*, const inference::ModelInferRequest* q,
                          inference::ModelInferResponse* r) override {
    return guarded([&] {
      ServedModel& m = model(q->model_name(), q->model_version());
      if (!models_.ready()) throw RequestError{Code::Unavailable, "the server is shutting down"};
      Tensors inputs;
      bool raw = q->raw_input_contents_size() > 0;
      if (raw && q->raw_input_contents_size() != q->inputs_size())
        throw RequestError{Code::BadRequest, "raw_input_contents has " + std::to_string(q->raw_input_contents_size()) +
                                                 " entries for " + std::to_string(q->inputs_size()) + " inputs"};
      for (int i = 0; i < q->inputs_size(); ++i) {
        const auto& in = q->inputs(i);
        WireTensor w{in.name(), in.datatype(), {in.shape().begin(), in.shape().end()}};
        if (inputs.count(w.name)) throw RequestError{Code::BadRequest, "input '" + w.name + "' is given twice"};
        inputs[w.name] = raw ? from_raw(w, q->raw_input_contents(i).data(), q->raw_input_contents(i).size())
                             : from_contents(w, in.contents());
      }
      std::string cls;
      if (auto p = q->parameters().find("class"); p != q->parameters().end()) {
        if (p->second.parameter_choice_case() != inference::InferParameter::kStringParam)
          throw RequestError{Code::BadRequest, "parameter 'class' must be a string"};
        cls = p->second.string_param();
      }
      Completion c = m.infer_sync(std::move(inputs), cls);
      if (!c.status.ok()) throw RequestError{c.status.code, c.status.message};
      r->set_model_name(m.name());
      r->set_model_version(kModelVersion);
      r->set_id(q->id());
      std::vector<std::pair<std::string, int64_t>> wanted;  // name, classes (0: the tensor)
      for (const auto& o : q->outputs()) {
        int64_t classes = 0;
        if (auto p = o.parameters().find("classification"); p != o.parameters().end()) {
          if (p->second.parameter_choice_case() != inference::InferParameter::kInt64Param || p->second.int64_param() < 0)
            throw RequestError{Code::BadRequest, "output '" + o.name() + "': 'classification' must be a count"};
          classes = p->second.int64_param();
        }
        wanted.emplace_back(o.name(), classes);
      }
      if (wanted.empty())
        for (const auto& o : m.signature().outputs) wanted.emplace_back(o.name, 0);
      for (const auto& [name, classes] : wanted) {
        auto it = c.outputs.find(name);
        if (it == c.outputs.end()) throw RequestError{Code::BadRequest, "unknown output '" + name + "' requested"};
        const Tensor& t = it->second;
        auto* out = r->add_outputs();
        out->set_name(name);
        if (classes > 0) {
          const Classes top = classify(t, classes, m.signature().batched, name);
          out->set_datatype("BYTES");
          for (int64_t d : top.dims) out->add_shape(d);
          r->add_raw_output_contents(bytes_contents(top.items));
          continue;
        }
        out->set_datatype(triton_dtype(t.dtype()));
        for (int64_t d : t.dims()) out->add_shape(d);
        r->add_raw_output_contents(static_cast<const char*>(t.raw()), t.nbytes());
      }
    });
  }

 private:
  ServedModel& model(const std::string& name, const std::string& version) {
    ServedModel* m = models_.find(name);
    if (!m) throw RequestError{Code::NotFound, "unknown model '" + name + "'"};
    if (!version.empty() && version != kModelVersion)
      throw RequestError{Code::NotFound, "model '" + name + "' has no version '" + version + "'"};
    return *m;
  }
  template <class F>
  grpc::Status guarded(F&& f) {
    try {
      f();
      return grpc::Status::OK;
    } catch (const RequestError& e) {
      return to_grpc(e.code, e.message);
    } catch (const Error& e) {
      return to_grpc(code_of(e.kind()), e.what());
    } catch (const std::exception& e) {
      return to_grpc(Code::Internal, e.what());
    }
  }

  Models& models_;
};

GrpcServer::GrpcServer(Models& models, int64_t max_message_bytes)
    : service_(std::make_unique<GrpcService>(models)), max_message_bytes_(max_message_bytes) {}

GrpcServer::~GrpcServer() { stop(); }

void GrpcServer::start(const std::string& host, int port) {
  grpc::ServerBuilder b;
  int bound = 0;
  b.AddListeningPort(host + ":" + std::to_string(port), grpc::InsecureServerCredentials(), &bound);
  b.SetMaxReceiveMessageSize(static_cast<int>(std::min<int64_t>(max_message_bytes_, INT32_MAX)));
  b.SetMaxSendMessageSize(INT32_MAX);
  b.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  b.RegisterService(service_.get());
  server_ = b.BuildAndStart();
  if (!server_ || bound == 0)
    throw Error(bind_failure(host, port));
}

void GrpcServer::stop() {
  if (!server_) return;
  server_->Shutdown();  // refuses new calls; waits for the ones in flight
  server_->Wait();
  server_.reset();
}

}  // namespace fusor::serve
