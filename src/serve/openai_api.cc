#include "serve/openai_api.h"

#include <httplib.h>

#include "serve/generation_stream.h"
#include "serve/json_content_type.h"
#include "serve/openai_request.h"
#include "serve/openai_response.h"
#include "serve/request_body.h"
#include "serve/sse_stream.h"

namespace fusor::serve {
namespace {


void send_error(httplib::Response& res, const FieldError& e) {
  res.status = http_status(e.code);
  res.set_content(dump_json(openai_error_json(e)), kJsonContentType);
}

// Runs a handler, answering whatever it throws in OpenAI's error shape.
template <class Handler>
auto guarded(Handler handler) {
  return [handler](const httplib::Request& req, httplib::Response& res) {
    try {
      handler(req, res);
    } catch (const FieldError& e) {
      send_error(res, e);
    } catch (const RequestError& e) {
      send_error(res, {e.code, e.message, ""});
    } catch (const Error& e) {
      send_error(res, {code_of(e.kind()), e.what(), ""});
    } catch (const std::exception& e) {
      send_error(res, {Code::Internal, e.what(), ""});
    }
  };
}

void refuse_other_methods(httplib::Server& server, const std::string& path, const std::string& allowed) {
  auto refuse = [allowed](const httplib::Request& req, httplib::Response& res) {
    send_error(res, {Code::BadRequest, req.method + " is not allowed on " + req.path + "; use " + allowed, ""});
    res.status = 405;
    res.set_header("Allow", allowed);
  };
  if (allowed != "GET") server.Get(path, refuse);
  if (allowed != "POST") server.Post(path, refuse);
  server.Put(path, refuse);
  server.Patch(path, refuse);
  server.Delete(path, refuse);
}

// The model a body names; with no "model", the one decoder served (when there is one).
GenerativeModel& find_model(Models& models, const std::string& name) {
  if (name.empty()) {
    std::vector<GenerativeModel*> all = models.generative();
    if (all.size() == 1) return *all.front();
    throw FieldError{Code::BadRequest, "'model' is required (this server serves " + std::to_string(all.size()) + " generative models)", "model"};
  }
  GenerativeModel* m = models.find_generative(name);
  if (!m) {
    const std::string why = models.find(name) ? "` is not a generative model." : "` does not exist.";
    throw FieldError{Code::NotFound, "The model `" + name + why, "model"};
  }
  return *m;
}

nlohmann::json model_card(const GenerativeModel& m) {
  return {{"id", m.name()},
          {"object", "model"},
          {"created", m.created_unix()},
          {"owned_by", "fusor"},
          {"max_model_len", m.spec().context_length}};
}

nlohmann::json error_event(const Status& s) { return openai_error_json({s.code, s.message, ""}); }

void completions(Models& models, OpenAiEndpoint endpoint, int64_t max_body_bytes, const httplib::Request& req,
                 httplib::Response& res) {
  inflate_body(req, max_body_bytes);
  const nlohmann::json body = parse_json_object(req.body);
  GenerativeModel& model = find_model(models, requested_model(body));
  if (!models.ready()) throw FieldError{Code::Unavailable, models.why_not_ready(), ""};
  OpenAiRequest r;
  try {
    r = parse_openai_request(body, endpoint, target_of(model), req.body);
  } catch (const FieldError& e) {
    auto cls = body.find("fusor_class");
    model.refused(cls != body.end() && cls->is_string() ? cls->get<std::string>() : "", e.code);
    throw;
  }
  auto responder = std::make_shared<OpenAiResponder>(endpoint, model.name(), static_cast<int64_t>(r.generation.prompt.size()));
  auto stream = GenerationStream::create(model.stream_hub());
  const uint64_t id = model.submit(std::move(r.generation), stream->events());

  if (!r.stream) {
    auto body = [responder](const GenerationOutcome& o) {
      return dump_json(o.status.ok() ? responder->full(o) : error_event(o.status));
    };
    if (std::optional<GenerationOutcome> early = answer_when_done(res, model, id, stream, kJsonContentType, body)) {
      if (!early->status.ok()) throw FieldError{early->status.code, early->status.message, ""};
      res.status = 200;
      res.set_content(body(*early), kJsonContentType);
    }
    return;
  }
  SseFormat format;
  if (endpoint == OpenAiEndpoint::ChatCompletions)
    format.start = [responder] { return std::vector<std::string>{sse_json_event(responder->role_chunk())}; };
  format.piece = [responder](std::string_view text) {
    return text.empty() ? std::string() : responder->text_chunk_event(text);
  };
  format.end = [responder, include_usage = r.include_usage](const GenerationOutcome& o) {
    std::vector<std::string> events;
    if (!o.status.ok()) {
      events.push_back(sse_json_event(error_event(o.status)));
    } else {
      events.push_back(sse_json_event(responder->finish_chunk(o)));
      if (include_usage) events.push_back(sse_json_event(responder->usage_chunk(o)));
    }
    events.push_back(sse_event("[DONE]"));
    return events;
  };
  if (std::optional<GenerationOutcome> early = stream_sse(res, model, id, stream, std::move(format)))
    throw FieldError{early->status.code, early->status.message, ""};  // failed before its first token
}

}  // namespace

void add_openai_routes(httplib::Server& server, Models& models, int64_t max_body_bytes) {
  Models* ms = &models;
  server.Post("/v1/completions", guarded([ms, max_body_bytes](const httplib::Request& req, httplib::Response& res) {
                completions(*ms, OpenAiEndpoint::Completions, max_body_bytes, req, res);
              }));
  server.Post("/v1/chat/completions", guarded([ms, max_body_bytes](const httplib::Request& req, httplib::Response& res) {
                completions(*ms, OpenAiEndpoint::ChatCompletions, max_body_bytes, req, res);
              }));
  server.Get("/v1/models", guarded([ms](const httplib::Request&, httplib::Response& res) {
               nlohmann::json data = nlohmann::json::array();
               for (GenerativeModel* m : ms->generative()) data.push_back(model_card(*m));
               res.set_content(dump_json({{"object", "list"}, {"data", data}}), kJsonContentType);
             }));
  server.Get("/v1/models/(.+)", guarded([ms](const httplib::Request& req, httplib::Response& res) {
               res.set_content(dump_json(model_card(find_model(*ms, req.matches[1]))), kJsonContentType);
             }));
  server.Get("/health", [ms](const httplib::Request&, httplib::Response& res) { res.status = ms->ready() ? 200 : 503; });
  // The other methods on these paths: 405 naming the one allowed, as vLLM answers (httplib's
  // default is 404, which reads as a wrong URL).
  for (const char* path : {"/v1/completions", "/v1/chat/completions"}) refuse_other_methods(server, path, "POST");
  for (const char* path : {"/v1/models", "/v1/models/(.+)", "/health"}) refuse_other_methods(server, path, "GET");
}

bool is_openai_path(const std::string& path) { return path.starts_with("/v1/"); }

void send_openai_not_found(const httplib::Request& req, httplib::Response& res) {
  send_error(res, {Code::NotFound, "no such endpoint: " + req.method + " " + req.path, ""});
}

}  // namespace fusor::serve
