#include "serve/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <thread>

#include "fusor/error.h"
#include "kserve.grpc.pb.h"
#include "serve/generation_stream.h"
#include "serve/grpc_generate.h"
#include "serve/grpc_infer.h"
#include "serve/grpc_stream.h"
#include "serve/kserve_json.h"
#include "serve/listen_sockets.h"

namespace fusor::serve {
namespace {

grpc::Status to_grpc(Code code, const std::string& message) {
  // A status travels in a header, which gRPC caps at 16 KiB: an error echoing a 20 KB model or
  // input name reached the client as RESOURCE_EXHAUSTED ("received metadata size exceeds hard
  // limit") instead of its own code.
  constexpr size_t kMaxMessage = 2048;
  if (message.size() > kMaxMessage)
    return {static_cast<grpc::StatusCode>(grpc_status(code)),
            message.substr(0, kMaxMessage) + "... (" + std::to_string(message.size()) + " characters)"};
  return {static_cast<grpc::StatusCode>(grpc_status(code)), message};
}

// How often a stream with nothing to write checks that its client and the server are still there.
constexpr std::chrono::milliseconds kStreamPoll{100};

void fill_tensor_metadata(inference::ModelMetadataResponse::TensorMetadata* t, const nlohmann::json& j) {
  t->set_name(j["name"]);
  t->set_datatype(j["datatype"]);
  for (int64_t d : j["shape"]) t->add_shape(d);
}

inference::ModelStreamInferResponse stream_error(const inference::ModelInferRequest& q, const std::string& message) {
  inference::ModelStreamInferResponse r;
  r.set_error_message(message);
  r.mutable_infer_response()->set_model_name(q.model_name());
  r.mutable_infer_response()->set_id(q.id());
  return r;
}

inference::ModelStreamInferResponse streamed(inference::ModelInferResponse r) {
  inference::ModelStreamInferResponse s;
  *s.mutable_infer_response() = std::move(r);
  return s;
}

// Triton sends a decoupled request's empty final response only to a client that asked for it
// (tritonclient's enable_empty_final_response; perf_analyzer does, to time each request).
bool wants_empty_final_response(const inference::ModelInferRequest& q) {
  auto p = q.parameters().find("triton_enable_empty_final_response");
  return p != q.parameters().end() && p->second.parameter_choice_case() == inference::InferParameter::kBoolParam &&
         p->second.bool_param();
}

// What an encoder's stream response needs of its request: the id and the outputs asked for, not
// the input data.
inference::ModelInferRequest without_inputs(const inference::ModelInferRequest& q) {
  inference::ModelInferRequest light;
  light.set_model_name(q.model_name());
  light.set_id(q.id());
  *light.mutable_outputs() = q.outputs();
  return light;
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
    const bool known = (models_.find(q->name()) || models_.find_generative(q->name())) &&
                       (q->version().empty() || q->version() == kModelVersion);
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
      const Named n = named(q->name(), q->version());
      const nlohmann::json j = n.encoder ? model_metadata(*n.encoder) : generative_metadata(*n.decoder);
      r->set_name(j["name"]);
      r->add_versions(kModelVersion);
      r->set_platform(j["platform"]);
      for (const auto& t : j["inputs"]) fill_tensor_metadata(r->add_inputs(), t);
      for (const auto& t : j["outputs"]) fill_tensor_metadata(r->add_outputs(), t);
    });
  }
  grpc::Status ModelConfig(grpc::ServerContext*, const inference::ModelConfigRequest* q,
                           inference::ModelConfigResponse* r) override {
    return guarded([&] {
      const Named n = named(q->name(), q->version());
      const nlohmann::json j = n.encoder ? model_config(*n.encoder) : generative_config(*n.decoder);  // as over HTTP
      auto* c = r->mutable_config();
      c->set_name(j["name"]);
      c->set_platform(j["platform"]);
      c->set_backend(j["backend"]);
      c->set_max_batch_size(j["max_batch_size"].get<int>());
      auto dtype = [](const nlohmann::json& t) {
        inference::DataType d = inference::TYPE_INVALID;
        inference::DataType_Parse(t["data_type"].get<std::string>(), &d);
        return d;
      };
      for (const auto& t : j["input"]) {
        auto* in = c->add_input();
        in->set_name(t["name"]);
        in->set_data_type(dtype(t));
        for (int64_t d : t["dims"]) in->add_dims(d);
        in->set_optional(t.value("optional", false));
      }
      for (const auto& t : j["output"]) {
        auto* out = c->add_output();
        out->set_name(t["name"]);
        out->set_data_type(dtype(t));
        for (int64_t d : t["dims"]) out->add_dims(d);
      }
      auto* g = c->add_instance_group();
      g->set_name(j["name"]);
      g->set_kind(inference::ModelInstanceGroup::KIND_CPU);
      g->set_count(j["instance_group"][0]["count"].get<int>());
      if (j.contains("model_transaction_policy"))
        c->mutable_model_transaction_policy()->set_decoupled(j["model_transaction_policy"]["decoupled"]);
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
      std::vector<nlohmann::json> docs;
      if (q->name().empty()) {
        for (ServedModel* m : models_.all()) docs.push_back(model_stats(*m));
        for (GenerativeModel* g : models_.generative()) docs.push_back(generative_stats(*g));
      } else {
        const Named n = named(q->name(), q->version());
        docs.push_back(n.encoder ? model_stats(*n.encoder) : generative_stats(*n.decoder));
      }
      for (const nlohmann::json& j : docs) {
        auto* s = r->add_model_stats();
        s->set_name(j["name"]);
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
  grpc::Status ModelInfer(grpc::ServerContext* ctx, const inference::ModelInferRequest* q,
                          inference::ModelInferResponse* r) override {
    return guarded([&] {
      const Named n = named(q->model_name(), q->model_version());
      if (!models_.ready()) throw RequestError{Code::Unavailable, models_.why_not_ready()};
      if (n.decoder) return generate_whole(*n.decoder, *ctx, *q, *r);
      EncoderRequest e = read_encoder(*n.encoder, *q);
      Completion c = n.encoder->infer_sync(std::move(e.inputs), e.cls, [ctx] { return ctx->IsCancelled(); });
      if (!c.status.ok()) throw RequestError{c.status.code, c.status.message};
      fill_encoder_response(*n.encoder, *q, c.outputs, *r);
    });
  }

  // Triton's streaming extension: requests in, each answered when ready (an encoder's outputs;
  // a generation's tokens, one response each, when its "stream" input is true), errors as
  // error_message responses that leave the stream open.
  grpc::Status ModelStreamInfer(
      grpc::ServerContext* ctx,
      grpc::ServerReaderWriter<inference::ModelStreamInferResponse, inference::ModelInferRequest>* stream) override {
    auto out = std::make_shared<StreamResponses>();
    std::atomic<bool> reads_ended{false};
    std::thread reader([&] {
      inference::ModelInferRequest q;
      while (stream->Read(&q)) start_streamed(q, out);
      reads_ended = true;
    });
    for (;;) {
      if (std::optional<inference::ModelStreamInferResponse> r = out->next(kStreamPoll)) {
        const bool sent = stream->Write(*r);
        out->written();
        if (!sent) break;  // the client is gone
        continue;
      }
      if (ctx->IsCancelled()) break;
      // Everything answered, and the client has closed its side, or the server drains: a client
      // keeping an idle stream open would otherwise hold a graceful shutdown forever.
      if (out->idle() && (reads_ended || models_.stopping())) break;
    }
    if (!reads_ended) ctx->TryCancel();  // ends the reader's Read
    reader.join();
    out->end();
    return grpc::Status::OK;
  }

 private:
  // The model a call names: an encoder (batched tensors) or a decoder (generation).
  struct Named {
    ServedModel* encoder = nullptr;
    GenerativeModel* decoder = nullptr;
  };
  Named named(const std::string& name, const std::string& version) {
    const Named n{models_.find(name), models_.find_generative(name)};
    if (!n.encoder && !n.decoder) throw RequestError{Code::NotFound, "unknown model '" + name + "'"};
    if (!version.empty() && version != kModelVersion)
      throw RequestError{Code::NotFound, "model '" + name + "' has no version '" + version + "'"};
    return n;
  }
  EncoderRequest read_encoder(ServedModel& m, const inference::ModelInferRequest& q) {
    try {
      check_requested_outputs(m, q);
      return read_encoder_request(q);
    } catch (const RequestError& e) {
      m.refused("", e.code);
      throw;
    }
  }
  TensorGenerateRequest read_generation(GenerativeModel& g, const inference::ModelInferRequest& q) {
    try {
      return read_generate_request(q, target_of(g));
    } catch (const RequestError& e) {
      g.refused("", e.code);
      throw;
    }
  }

  // A generation answered whole, on a unary ModelInfer; cancelled if the client leaves first.
  void generate_whole(GenerativeModel& g, grpc::ServerContext& ctx, const inference::ModelInferRequest& q,
                      inference::ModelInferResponse& r) {
    GenerateResponses answer(g.name(), q, read_generation(g, q));
    if (answer.request().stream)
      throw RequestError{Code::BadRequest, "'stream' asks for a response per token: call ModelStreamInfer"};
    auto stream = GenerationStream::create(g.stream_hub());
    const uint64_t id = g.submit(GenerationRequest(answer.request().request.generation), stream->events());
    std::optional<GenerationOutcome> outcome;
    while (!outcome) {
      if (std::optional<GenerationStream::Update> u = stream->next(kStreamPoll); u && u->done) outcome = u->done;
      else if (ctx.IsCancelled()) g.cancel(id);
    }
    if (!outcome->status.ok()) throw RequestError{outcome->status.code, outcome->status.message};
    const TritonGenerateRequest& t = answer.request().request;
    r = answer.last((t.include_input ? t.text_input : "") + outcome->result.text, *outcome, false);
  }

  // Begins one request read from a stream; its answers go to `out`. Never throws.
  void start_streamed(const inference::ModelInferRequest& q, const std::shared_ptr<StreamResponses>& out) {
    Named n;
    try {
      n = named(q.model_name(), q.model_version());
      if (!models_.ready()) throw RequestError{Code::Unavailable, models_.why_not_ready()};
    } catch (const RequestError& e) {
      return out->push(out->begin(), stream_error(q, e.message), true);
    }
    const uint64_t k = out->begin(n.decoder);
    try {
      if (n.decoder) return start_streamed_generation(*n.decoder, q, out, k);
      EncoderRequest e = read_encoder(*n.encoder, q);
      ServedModel* m = n.encoder;
      n.encoder->infer(std::move(e.inputs), e.cls, [out, k, m, q = without_inputs(q)](Completion c) {
        if (!c.status.ok()) return out->push(k, stream_error(q, c.status.message), true);
        inference::ModelStreamInferResponse r;
        try {
          fill_encoder_response(*m, q, c.outputs, *r.mutable_infer_response());
        } catch (const RequestError& e) {
          return out->push(k, stream_error(q, e.message), true);
        }
        out->push(k, std::move(r), true);
      }, [out] { return out->ended(); });
    } catch (const RequestError& e) {
      out->push(k, stream_error(q, e.message), true);
    } catch (const std::exception& e) {
      out->push(k, stream_error(q, e.what()), true);
    }
  }

  void start_streamed_generation(GenerativeModel& g, const inference::ModelInferRequest& q,
                                 const std::shared_ptr<StreamResponses>& out, uint64_t k) {
    auto answer = std::make_shared<GenerateResponses>(g.name(), q, read_generation(g, q));
    const TritonGenerateRequest& t = answer->request().request;
    const bool per_token = answer->request().stream, empty_final = wants_empty_final_response(q);
    if (per_token && t.include_input) out->push(k, streamed(answer->piece(t.text_input, true)), false);
    GenerationEvents events;
    // Triton marks the response that carries a generation's last token final: a client that keeps
    // the stream open for more requests learns from it that this one ended. A request with more
    // outputs at the end (finish_reason, counts), or one that asked for an empty final response,
    // gets its final response from on_done instead.
    const bool last_token_is_final = per_token && !empty_final && !answer->has_final_outputs();
    if (per_token)
      events.on_token = [out, k, answer, last_token_is_final](TokenId, std::string_view text, bool last) {
        const bool final = last && last_token_is_final;
        if (!text.empty() || final) out->push(k, streamed(answer->piece(std::string(text), true, final)), final);
      };
    else
      events.on_token = [](TokenId, std::string_view, bool) {};
    events.on_done = [out, k, answer, per_token, empty_final, q = without_inputs(q)](const GenerationOutcome& o) {
      if (!o.status.ok()) return out->push(k, stream_error(q, o.status.message), true);
      if (per_token && !empty_final && !answer->has_final_outputs() && !o.result.output_ids.empty())
        return;  // the last token's response was final
      const TritonGenerateRequest& t = answer->request().request;
      const std::string text = per_token ? "" : (t.include_input ? t.text_input : "") + o.result.text;
      inference::ModelInferResponse last = answer->last(text, o, true);
      if (last.outputs_size() == 0 && !empty_final) return out->end_silently(k);
      out->push(k, streamed(std::move(last)), true);
    };
    out->started(k, g.submit(GenerationRequest(t.generation), std::move(events)));
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
  grpc::ResourceQuota quota("fusor-grpc");
  quota.SetMaxThreads(kGrpcMaxThreads);
  b.SetResourceQuota(quota);
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
