#include "serve/sse_stream.h"

#include <httplib.h>

#include <utility>

namespace fusor::serve {
namespace {

// How often a stream waiting for its next token checks that the client is still there.
constexpr std::chrono::milliseconds kClientCheck{100};

bool write_all(httplib::DataSink& sink, const std::vector<std::string>& events) {
  for (const std::string& e : events)
    if (!e.empty() && !sink.write(e.data(), e.size())) return false;
  return true;
}

// Waits for the first token or the outcome that came before one. The client is not checked
// meanwhile: no response has begun, and a request waiting in the queue costs no compute.
GenerationStream::Update first_update(GenerationStream& stream) {
  std::optional<GenerationStream::Update> first;
  while (!(first = stream.next(kClientCheck))) {
  }
  return std::move(*first);
}

}  // namespace

std::string sse_event(std::string_view payload) {
  std::string e = "data: ";
  e.append(payload);
  e += "\n\n";
  return e;
}

std::string sse_json_event(const nlohmann::json& payload) {
  return sse_event(payload.dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace));
}

std::optional<GenerationOutcome> stream_sse(httplib::Response& res, GenerativeModel& model, uint64_t id,
                                            std::shared_ptr<GenerationStream> stream, SseFormat format) {
  auto first = std::make_shared<std::optional<GenerationStream::Update>>(first_update(*stream));
  if ((*first)->done && !(*first)->done->status.ok()) return (*first)->done;
  auto started = std::make_shared<bool>(false);
  model.stream_opened();  // closed by the releaser, which httplib runs whether or not it streamed
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      // Exactly this type: cpp-httplib gzips any other text/* for a client that accepts gzip
      // (aiohttp, requests and the openai client all do), and its compressor holds every event
      // until the stream ends. SSE is UTF-8 by definition, so no charset is needed.
      "text/event-stream",
      [stream, format, started, first](size_t, httplib::DataSink& sink) {
        if (!*started) {
          *started = true;
          if (format.start && !write_all(sink, format.start())) return false;
        }
        std::optional<GenerationStream::Update> u = std::exchange(*first, std::nullopt);
        while (!u && !(u = stream->next(kClientCheck)))
          if (!sink.is_writable()) return false;  // the client left between tokens
        std::vector<std::string> events;
        for (const std::string& p : u->pieces) events.push_back(format.piece(p));
        if (!write_all(sink, events)) return false;
        if (u->done) {
          if (!write_all(sink, format.end(*u->done))) return false;
          sink.done();
        }
        return true;
      },
      // Runs when the response ends, whole or not: a request still going has lost its client.
      [&model, id, stream](bool) {
        if (!stream->finished()) model.cancel(id);
        model.stream_closed();
      });
  return std::nullopt;
}

std::optional<GenerationOutcome> answer_when_done(httplib::Response& res, GenerativeModel& model, uint64_t id,
                                                  std::shared_ptr<GenerationStream> stream, const char* content_type,
                                                  std::function<std::string(const GenerationOutcome&)> body) {
  const GenerationStream::Update first = first_update(*stream);
  if (first.done) return first.done;
  model.stream_opened();  // closed by the releaser, as for a stream: a graceful shutdown waits for it
  res.status = 200;
  res.set_chunked_content_provider(
      content_type,
      [stream, body = std::move(body)](size_t, httplib::DataSink& sink) {
        std::optional<GenerationStream::Update> u;  // pieces are dropped: the outcome holds the text
        while (!(u = stream->next(kClientCheck)) || !u->done)
          if (!sink.is_writable()) return false;  // the client left; the releaser cancels
        const std::string text = body(*u->done);
        if (!sink.write(text.data(), text.size())) return false;
        sink.done();
        return true;
      },
      [&model, id, stream](bool) {
        if (!stream->finished()) model.cancel(id);
        model.stream_closed();
      });
  return std::nullopt;
}

}  // namespace fusor::serve
