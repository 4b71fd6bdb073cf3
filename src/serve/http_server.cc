#include "serve/http_server.h"

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <vector>

#include <httplib.h>

#include "fusor/error.h"
#include "serve/classification.h"
#include "serve/connection_threads.h"
#include "serve/json_content_type.h"
#include "serve/kserve_json.h"
#include "serve/generation_stats.h"
#include "serve/metrics.h"
#include "serve/openai_api.h"
#include "serve/request_body.h"
#include "serve/listen_sockets.h"
#include "serve/triton_generate.h"

namespace fusor::serve {
namespace {

void send_error(httplib::Response& res, Code code, const std::string& message) {
  res.status = http_status(code);
  res.set_content(error_body(message), kJsonContentType);
}

// httplib keeps a connection open after any answer it writes in full; only a write that reports
// failure makes it close one. So this answer goes out through a provider that writes it whole,
// then reports failure.
void send_error_and_close(httplib::Response& res, Code code, const std::string& message) {
  res.status = http_status(code);
  res.set_header("Connection", "close");
  res.set_content_provider(error_body(message).size(), kJsonContentType,
                           [body = error_body(message)](size_t offset, size_t length, httplib::DataSink& sink) {
                             sink.write(body.data() + offset, length);
                             return false;
                           });
}

// Connections served at once (serve/connection_threads.h: a thread each, started as they come).
// A generation stream or an idle keep-alive connection holds its thread, so this is well above
// serve.max_sequences' default and perf_analyzer's usual concurrencies; beyond it, connections
// wait in the listener's backlog.
constexpr size_t kHttpThreads = 1024;
// Connections the kernel queues while the listener is busy. Debian's httplib is a compiled
// library that listens with a backlog of 5, so of 16 streaming clients connecting at once, 8
// waited for their SYN retry: ~1.1 s to the first token. The kernel caps it at somaxconn.
constexpr int kListenBacklog = 1024;

// The in-flight count holding this thread's request, if any (HttpServer::requests_in_flight_).
thread_local std::atomic<int>* t_counted_in = nullptr;

void end_counted_request() {
  if (t_counted_in) --*t_counted_in;
  t_counted_in = nullptr;
}

// Every Content-Length value, trimmed: each header, and each item of one given as a list.
std::vector<std::string> content_lengths(const httplib::Request& req) {
  std::vector<std::string> values;
  auto [begin, end] = req.headers.equal_range("Content-Length");
  for (auto h = begin; h != end; ++h)
    for (size_t at = 0; at <= h->second.size();) {
      const size_t comma = std::min(h->second.find(',', at), h->second.size());
      std::string value = h->second.substr(at, comma - at);
      value.erase(0, value.find_first_not_of(" \t"));
      value.erase(value.find_last_not_of(" \t") + 1);
      values.push_back(std::move(value));
      at = comma + 1;
    }
  return values;
}

// Content-Length given twice (or as a list) with different values. Which one ends the body is
// what request smuggling exploits: a proxy and this server would each frame it their own way, so
// RFC 9112 (6.3) makes it an error. httplib would read the first.
bool has_conflicting_lengths(const std::vector<std::string>& lengths) {
  return std::any_of(lengths.begin(), lengths.end(), [&](const std::string& v) { return v != lengths.front(); });
}

// Whether every Content-Length value is a number of bytes (digits alone, RFC 9112 6.3). httplib
// read "1e3" or "1abc" as 1 and took the rest of the body as the connection's next request.
bool content_length_is_a_number(const std::vector<std::string>& lengths) {
  return std::all_of(lengths.begin(), lengths.end(), [](const std::string& v) {
    return !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
  });
}

// The body's length as its (one, checked) Content-Length header gives it; 0 without one or for a
// value that is not a number (httplib then reads no body), INT64_MAX past that.
int64_t declared_length(const httplib::Request& req) {
  auto h = req.headers.find("Content-Length");
  if (h == req.headers.end()) return 0;
  const std::string& v = h->second;
  const size_t digits = v.find_first_not_of(" \t");
  if (digits == std::string::npos || !std::isdigit(static_cast<unsigned char>(v[digits]))) return 0;
  errno = 0;
  const unsigned long long n = std::strtoull(v.c_str() + digits, nullptr, 10);
  return errno == ERANGE || n > static_cast<unsigned long long>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(n);
}

std::string body_limit_message(int64_t limit) {
  return "request body exceeds the limit of " + std::to_string(limit) + " bytes (serve.max_body_bytes)";
}

void send_json(httplib::Response& res, const nlohmann::json& j) {
  res.status = 200;
  res.set_content(j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), kJsonContentType);
}

}  // namespace

HttpServer::HttpServer(Kind kind, Models& models, int64_t max_body_bytes)
    : models_(models), max_body_bytes_(max_body_bytes), server_(std::make_unique<httplib::Server>()) {
  // A response whose write failed (a client gone) skips the logger, which ends the others.
  server_->new_task_queue = [] { return new ConnectionThreads(kHttpThreads, end_counted_request); };
  // A request counts from its headers (before its body is read) until its response is written.
  server_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    // `curl -d @body.json` sends JSON as a form, which httplib parses, and refuses as too large
    // past 8 KiB. No route takes forms, so the body is read as it is (httplib's request is not
    // const; this handler is its one hook before the body is read).
    auto form = req.headers.find("Content-Type");
    if (form != req.headers.end() && form->second.starts_with("application/x-www-form-urlencoded"))
      const_cast<httplib::Request&>(req).headers.erase(form->first);
    defer_content_encoding(const_cast<httplib::Request&>(req));  // inflated by the handler, bounded
    // A request with neither Content-Length nor chunked encoding has no body (RFC 9112 6.3);
    // httplib read a POST's until the connection closed, and `curl -X POST` waited 10 s for 400.
    if (!req.has_header("Content-Length") && !req.has_header("Transfer-Encoding"))
      const_cast<httplib::Request&>(req).headers.emplace("Content-Length", "0");
    end_counted_request();
    t_counted_in = &requests_in_flight_;
    ++requests_in_flight_;
    const std::vector<std::string> lengths = content_lengths(req);
    if (has_conflicting_lengths(lengths)) {
      // Where its body ends is unknown, so nothing after it on this connection can be read.
      send_error_and_close(res, Code::BadRequest, "the request has conflicting Content-Length headers");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!content_length_is_a_number(lengths)) {
      send_error_and_close(res, Code::BadRequest, "the request's Content-Length is not a number of bytes");
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib (0.11) reads a chunked body whole, past serve.max_body_bytes: one client could fill
    // the memory. So a body comes with a Content-Length, as tritonclient, perf_analyzer, the
    // openai SDK and curl -d send it; 411 Length Required says so (RFC 9110 15.5.12).
    if (req.has_header("Transfer-Encoding")) {
      send_error_and_close(res, Code::BadRequest,
                           "send the request body with a Content-Length: a chunked body is not accepted, as its size "
                           "could not be held to serve.max_body_bytes");
      res.status = 411;
      return httplib::Server::HandlerResponse::Handled;
    }
    // httplib reads (and drops) a body over the limit before its 413, so a client that sent only
    // the headers waited for the read timeout (10 s) and held a thread meanwhile.
    if (declared_length(req) > max_body_bytes_) {
      send_error_and_close(res, Code::BadRequest, body_limit_message(max_body_bytes_));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server_->set_logger([](const httplib::Request&, const httplib::Response&) { end_counted_request(); });
  // An answer written while the server drains tells its keep-alive client to close: the listener
  // stops once the last answer is out, and a next request on the connection would meet a broken
  // pipe rather than a refused connection (which clients handle).
  server_->set_post_routing_handler([this](const httplib::Request&, httplib::Response& res) {
    if (!models_.ready()) res.set_header("Connection", "close");
  });
  // Not httplib's defaults: they add SO_REUSEPORT, which lets a second server bind the same port
  // and silently take half of its connections. SO_REUSEADDR alone still rebinds a port whose old
  // connections are in TIME_WAIT.
  server_->set_socket_options([this](int sock) {
    const int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_socket_ = sock;
  });
  server_->set_tcp_nodelay(true);  // else small responses wait for the peer's delayed ACK (40 ms)
  server_->set_payload_max_length(static_cast<size_t>(max_body_bytes));
  server_->set_read_timeout(10, 0);  // a slow or stalled client holds one thread at most this long
  server_->set_write_timeout(10, 0);
  server_->set_keep_alive_timeout(30);
  // httplib closes a connection after 5 requests by default, so busy clients (perf_analyzer,
  // the openai SDK) reconnected every fifth request. Idle connections still end after the timeout.
  server_->set_keep_alive_max_count(100000);
  server_->set_error_handler([max_body_bytes](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_) return;  // a handler's own {"error": ...}
    if (res.status == 413) return send_error(res, Code::BadRequest, body_limit_message(max_body_bytes));
    if (res.status == 404 && is_openai_path(req.path)) return send_openai_not_found(req, res);
    if (res.status == 404) return send_error(res, Code::NotFound, "no such endpoint: " + req.method + " " + req.path);
    if (res.status == 503) return send_error(res, Code::Unavailable, "not ready");  // a health check's answer
    send_error(res, res.status >= 500 ? Code::Internal : Code::BadRequest, "bad request");
  });
  server_->set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const RequestError& e) {
      send_error(res, e.code, e.message);
    } catch (const Error& e) {
      send_error(res, code_of(e.kind()), e.what());
    } catch (const std::exception& e) {
      send_error(res, Code::Internal, e.what());
    } catch (...) {
      send_error(res, Code::Internal, "unknown error");
    }
  });
  if (kind == Kind::Inference) inference_routes();
  else metrics_routes();
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::inference_routes() {
  auto& s = *server_;
  // The model a route names: an encoder, or a decoder (generative; nullptr for the other).
  auto named = [this](const httplib::Request& req) -> std::pair<ServedModel*, GenerativeModel*> {
    const std::string& name = req.matches[1];
    std::pair<ServedModel*, GenerativeModel*> n{models_.find(name), models_.find_generative(name)};
    if (!n.first && !n.second) throw RequestError{Code::NotFound, "unknown model '" + name + "'"};
    if (req.matches.size() > 2 && req.matches[2].matched && req.matches[2] != kModelVersion)
      throw RequestError{Code::NotFound, "model '" + name + "' has no version '" + std::string(req.matches[2]) + "'"};
    return n;
  };
  auto model = [named](const httplib::Request& req) -> ServedModel& {
    auto [encoder, decoder] = named(req);
    if (!encoder) {
      decoder->refused("", Code::BadRequest);  // counted as the decoder's failure
      throw RequestError{Code::BadRequest, "model '" + decoder->name() +
                                               "' is a generative model: use its /generate or /generate_stream, "
                                               "/v1/completions, or gRPC ModelStreamInfer"};
    }
    return *encoder;
  };
  const std::string m = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  s.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) { res.status = 200; });
  s.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
    res.status = models_.ready() ? 200 : 503;
  });
  s.Get("/v2", [](const httplib::Request&, httplib::Response& res) { send_json(res, server_metadata()); });
  // Before the model routes, which would read "stats" as a model's name.
  s.Get("/v2/models/stats", [this](const httplib::Request&, httplib::Response& res) {
    nlohmann::json all = nlohmann::json::array();
    for (ServedModel* sm : models_.all()) all.push_back(model_stats(*sm));
    for (GenerativeModel* g : models_.generative()) all.push_back(generative_stats(*g));
    send_json(res, {{"model_stats", all}});
  });
  s.Get(m, [named](const httplib::Request& req, httplib::Response& res) {
    auto [encoder, decoder] = named(req);
    send_json(res, encoder ? model_metadata(*encoder) : generative_metadata(*decoder));
  });
  s.Get(m + "/ready", [this, named](const httplib::Request& req, httplib::Response& res) {
    named(req);
    res.status = models_.ready() ? 200 : 503;
  });
  s.Get(m + "/config", [named](const httplib::Request& req, httplib::Response& res) {
    auto [encoder, decoder] = named(req);
    send_json(res, encoder ? model_config(*encoder) : generative_config(*decoder));
  });
  s.Get(m + "/stats", [named](const httplib::Request& req, httplib::Response& res) {
    auto [encoder, decoder] = named(req);
    send_json(res, {{"model_stats", {encoder ? model_stats(*encoder) : generative_stats(*decoder)}}});
  });
  s.Post(m + "/infer", [this, model](const httplib::Request& req, httplib::Response& res) {
    ServedModel& sm = model(req);
    if (!models_.ready()) throw RequestError{Code::Unavailable, models_.why_not_ready()};
    HttpInferRequest r;
    try {  // every refusal from here on is the model's failure, an oversize body's too
      inflate_body(req, max_body_bytes_);
      std::optional<size_t> header_length;
      if (req.has_header("Inference-Header-Content-Length")) {
        const std::string v = req.get_header_value("Inference-Header-Content-Length");
        size_t used = 0;
        try {
          header_length = std::stoull(v, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        // stoull reads "-5" as 2^64 - 5: only digits are a length.
        if (used == 0 || used != v.size() || v.find_first_not_of("0123456789") != std::string::npos)
          throw RequestError{Code::BadRequest, "bad Inference-Header-Content-Length '" + v + "'"};
      }
      r = parse_infer_request(req.body, header_length);
      for (const auto& o : r.outputs) check_requested_output(sm.signature(), o.name, o.classes);
    } catch (const RequestError& e) {
      sm.refused("", e.code);
      throw;
    }
    Completion c = sm.infer_sync(std::move(r.inputs), r.cls);
    if (!c.status.ok()) return send_error(res, c.status.code, c.status.message);
    HttpBody b = infer_response(sm.name(), r, sm.signature(), c.outputs);
    res.status = 200;
    if (b.header_length) res.set_header("Inference-Header-Content-Length", std::to_string(*b.header_length));
    // httplib's set_content copies its argument; a response body can be megabytes, so move it.
    res.body = std::move(b.body);
    res.set_header("Content-Type", b.header_length ? "application/octet-stream" : kJsonContentType);
  });
  add_openai_routes(s, models_, max_body_bytes_);
  add_triton_generate_routes(s, models_, max_body_bytes_);
  // Extensions fusor does not implement: shared memory, repository control, tracing, logging.
  auto unsupported = [](const httplib::Request& req, httplib::Response& res) {
    send_error(res, Code::Unsupported, req.path + " is not supported by this server");
  };
  for (const char* p : {R"(/v2/(systemsharedmemory|cudasharedmemory|repository|trace|logging)(/.*)?)",
                        R"(/v2/models/[^/]+(/versions/[^/]+)?/trace/setting)"}) {
    s.Get(p, unsupported);
    s.Post(p, unsupported);
  }
}

void HttpServer::metrics_routes() {
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(prometheus_text(models_.all(), generation_pending(models_.generative())) +
                        generation_prometheus_text(models_.generative()),
                    "text/plain; version=0.0.4");
  });
}

void HttpServer::start(const std::string& host, int port) {
  errno = 0;
  if (!server_->bind_to_port(host, port)) throw Error(listen_failure(host, port, errno));
  // listen() on a listening socket only sets its backlog.
  if (listen_socket_ >= 0 && ::listen(listen_socket_, kListenBacklog) != 0)
    throw Error(listen_failure(host, port, errno));
  port_ = bound_port(listen_socket_);
  thread_ = std::thread([this] {
    server_->listen_after_bind();
    loop_ended_ = true;
  });
  // httplib's stop() acts only on a loop that is running. Stopped before its thread got there
  // (another listener of this server failing to bind, on a busy host), the loop then accepted
  // forever and stop()'s join hung: so start() returns once the loop runs.
  while (!server_->is_running() && !loop_ended_) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

void HttpServer::stop() {
  if (!thread_.joinable()) return;
  server_->stop();
  // Idle keep-alive connections would hold their threads, and so the join, for the keep-alive
  // timeout (listen_sockets.h). Once every request has its answer written they are told to
  // close; earlier, httplib would take a closed reading side for a client gone and drop the
  // answer. Each connection serves at most one more request after stop(), but a client may
  // trickle that request's body forever (and a request not read in full by now gets 503 anyway):
  // past kDrainLimit the rest are cut off.
  const auto deadline = std::chrono::steady_clock::now() + kDrainLimit;
  while (requests_in_flight_ > 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  stop_reading_connections_on(port_);
  thread_.join();
}

}  // namespace fusor::serve
