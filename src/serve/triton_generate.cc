#include "serve/triton_generate.h"

#include <httplib.h>

#include "serve/generation_stream.h"
#include "serve/json_content_type.h"
#include "serve/json_infer.h"
#include "serve/kserve_json.h"
#include "serve/openai_response.h"
#include "serve/request_body.h"
#include "serve/sse_stream.h"

namespace fusor::serve {
namespace {

struct Answer {
  std::string model, id;
  TritonGenerateRequest request;
  int64_t prompt_tokens = 0;

  nlohmann::json body(const std::string& text) const {
    nlohmann::json j = {{"model_name", model}, {"model_version", kModelVersion}, {"text_output", text}};
    if (!id.empty()) j["id"] = id;
    return j;
  }
  // The extra outputs the vLLM backend returns on request, on the last answer.
  void add_outcome(nlohmann::json& j, const GenerationOutcome& o) const {
    if (request.return_finish_reason) j["finish_reason"] = openai_finish_reason(o);
    if (request.return_num_input_tokens) j["num_input_tokens"] = prompt_tokens;
    if (request.return_num_output_tokens) j["num_output_tokens"] = o.result.output_ids.size();
  }
};

void generate(Models& models, bool streamed, const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[1];
  GenerativeModel* model = models.find_generative(name);
  if (!model) {
    if (models.find(name)) throw RequestError{Code::BadRequest, "model '" + name + "' is not a generative model: use /infer"};
    throw RequestError{Code::NotFound, "unknown model '" + name + "'"};
  }
  if (req.matches[2].matched && req.matches[2] != kModelVersion)
    throw RequestError{Code::NotFound, "model '" + name + "' has no version '" + std::string(req.matches[2]) + "'"};
  if (!models.ready()) throw RequestError{Code::Unavailable, models.why_not_ready()};
  auto answer = std::make_shared<Answer>();
  try {
    answer->request = parse_triton_generate(parse_json_object(req.body), target_of(*model));
  } catch (const FieldError& e) {
    model->refused("", e.code);
    throw RequestError{e.code, e.message};
  }
  answer->model = model->name();
  answer->id = answer->request.id;
  answer->prompt_tokens = static_cast<int64_t>(answer->request.generation.prompt.size());
  auto stream = GenerationStream::create(model->stream_hub());
  const uint64_t id = model->submit(std::move(answer->request.generation), stream->events());

  if (!streamed) {
    auto body = [answer](const GenerationOutcome& o) {
      if (!o.status.ok()) return error_body(o.status.message);
      nlohmann::json j = answer->body((answer->request.include_input ? answer->request.text_input : "") + o.result.text);
      answer->add_outcome(j, o);
      return dump_json(j);
    };
    if (std::optional<GenerationOutcome> early = answer_when_done(res, *model, id, stream, kJsonContentType, body)) {
      if (!early->status.ok()) throw RequestError{early->status.code, early->status.message};
      res.status = 200;
      res.set_content(body(*early), kJsonContentType);
    }
    return;
  }
  SseFormat format;
  if (answer->request.include_input)
    format.start = [answer] { return std::vector<std::string>{sse_json_event(answer->body(answer->request.text_input))}; };
  format.piece = [answer](std::string_view text) { return text.empty() ? std::string() : sse_json_event(answer->body(std::string(text))); };
  format.end = [answer](const GenerationOutcome& o) {
    if (!o.status.ok()) return std::vector<std::string>{sse_event(error_body(o.status.message))};
    bool extras = answer->request.return_finish_reason || answer->request.return_num_input_tokens ||
                  answer->request.return_num_output_tokens;
    if (!extras) return std::vector<std::string>{};
    nlohmann::json j = answer->body("");
    answer->add_outcome(j, o);
    return std::vector<std::string>{sse_json_event(j)};
  };
  if (std::optional<GenerationOutcome> early = stream_sse(res, *model, id, stream, std::move(format)))
    throw RequestError{early->status.code, early->status.message};  // failed before its first token
}

}  // namespace

void add_triton_generate_routes(httplib::Server& server, Models& models, int64_t max_body_bytes) {
  Models* ms = &models;
  const std::string m = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  for (bool streamed : {false, true})
    server.Post(m + (streamed ? "/generate_stream" : "/generate"),
                [ms, max_body_bytes, streamed](const httplib::Request& req, httplib::Response& res) {
                  inflate_body(req, max_body_bytes);
                  generate(*ms, streamed, req, res);
                });
}

}  // namespace fusor::serve
