// sse_closed_loop: bench/genai_peers/closed_loop.py's load sent to a running `fusor serve` over
// streaming POST /v1/completions, from C++: one thread per client, each sending its next request
// as soon as its last one ends. The Python client it replaces (aiohttp) spent ~75 us of CPU per
// token, 6% of a 2-vCPU host at concurrency 16, on the cores the server computes on; a client on
// another machine costs the server nothing.
//   sse_closed_loop URL MODEL JOB.json   ->   one JSON line on stdout: the drivers' result format,
//                                              with each request's "text" in place of its ids
// Each request: {"model", "prompt": [ids], "max_tokens": N, "stream": true, "ignore_eos": true,
// "temperature": 0, "stream_options": {"include_usage": true}}. Every `data:` event with a choice
// is one token (its arrival is the token's time); the count is usage.completion_tokens.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace {

struct Record {
  double submit_s = -1, first_token_s = -1, last_token_s = -1;
  int64_t tokens = 0, events = 0;
  std::string text;
};

// Reads server-sent events out of the bytes as they come; `on_data` gets each data payload.
class SseReader {
 public:
  template <typename F>
  void feed(const char* data, size_t n, F&& on_data) {
    buffer_.append(data, n);
    size_t start = 0;
    for (size_t end; (end = buffer_.find("\n\n", start)) != std::string::npos; start = end + 2) {
      std::string_view event(buffer_.data() + start, end - start);
      if (event.rfind("data:", 0) == 0) {
        event.remove_prefix(5);
        while (!event.empty() && event.front() == ' ') event.remove_prefix(1);
        on_data(event);
      }
    }
    buffer_.erase(0, start);
  }

 private:
  std::string buffer_;
};

void one_request(httplib::Client& client, const std::string& model, const json& prompt, int64_t max_new_tokens,
                 Record& rec, Clock::time_point t0) {
  auto now = [t0] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const json body = {{"model", model},       {"prompt", prompt},     {"max_tokens", max_new_tokens},
                     {"stream", true},       {"ignore_eos", true},   {"temperature", 0},
                     {"stream_options", {{"include_usage", true}}}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  SseReader reader;
  std::string failure;
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    reader.feed(data, n, [&](std::string_view payload) {
      if (payload == "[DONE]") return;
      const json msg = json::parse(payload, nullptr, /*allow_exceptions=*/false);
      if (msg.is_discarded()) return void(failure = "a stream line is not JSON: " + std::string(payload.substr(0, 200)));
      if (msg.contains("error")) return void(failure = msg["error"].dump());
      if (msg.contains("usage") && msg["usage"].is_object()) rec.tokens = msg["usage"].value("completion_tokens", 0);
      if (msg.contains("choices") && !msg["choices"].empty()) {
        const double t = now();
        if (rec.first_token_s < 0) rec.first_token_s = t;
        rec.last_token_s = t;
        ++rec.events;
        const json& text = msg["choices"][0]["text"];
        if (text.is_string()) rec.text += text.get<std::string>();
      }
    });
    return failure.empty();
  };
  rec.submit_s = now();
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  if (!client.send(req, res, error) || !failure.empty() || res.status != 200)
    throw std::runtime_error("POST /v1/completions: " +
                             (!failure.empty() ? failure
                              : error != httplib::Error::Success ? httplib::to_string(error)
                                                                 : "HTTP " + std::to_string(res.status) + ": " + res.body));
  if (rec.first_token_s < 0) throw std::runtime_error("POST /v1/completions: the stream ended without a token");
  if (rec.tokens == 0) rec.tokens = rec.events;
}

// One level: `concurrency` client threads take the prompts in order until none is left.
json run_level(const std::string& url, const std::string& model, const json& prompts, int64_t concurrency,
               int64_t max_new_tokens) {
  std::vector<Record> records(prompts.size());
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::string failure;
  const auto t0 = Clock::now();
  std::vector<std::thread> clients;
  for (int64_t c = 0; c < std::min<int64_t>(concurrency, static_cast<int64_t>(prompts.size())); ++c)
    clients.emplace_back([&] {
      httplib::Client client(url);
      client.set_read_timeout(600);
      for (size_t i; (i = next.fetch_add(1)) < prompts.size();) {
        try {
          one_request(client, model, prompts[i], max_new_tokens, records[i], t0);
        } catch (const std::exception& e) {
          std::lock_guard lock(mu);
          if (failure.empty()) failure = e.what();
          next = prompts.size();  // the others stop after their request
        }
      }
    });
  for (auto& t : clients) t.join();
  if (!failure.empty()) throw std::runtime_error(failure);
  json requests = json::array();
  for (const Record& r : records)
    requests.push_back({{"submit_s", r.submit_s},
                        {"first_token_s", r.first_token_s},
                        {"last_token_s", r.last_token_s},
                        {"tokens", r.tokens},
                        {"text", r.text}});
  return {{"concurrency", concurrency},
          {"wall_s", std::chrono::duration<double>(Clock::now() - t0).count()},
          {"requests", requests}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s URL MODEL JOB.json  (the job's format: bench/genai_peers/closed_loop.py)\n",
                 argv[0]);
    return 2;
  }
  try {
    std::ifstream f(argv[3]);
    if (!f) throw std::runtime_error(std::string("cannot read ") + argv[3]);
    const json job = json::parse(f);
    const int64_t max_new_tokens = job.at("max_new_tokens").get<int64_t>();
    json levels = json::array();
    for (const json& spec : job.at("levels")) {
      const int64_t c = spec.at("concurrency").get<int64_t>();
      if (job.contains("warmup")) run_level(argv[1], argv[2], job["warmup"], c, max_new_tokens);
      levels.push_back(run_level(argv[1], argv[2], spec.at("prompts"), c, max_new_tokens));
    }
    std::cout << json{{"levels", levels}}.dump() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sse_closed_loop: %s\n", e.what());
    return 1;
  }
}
