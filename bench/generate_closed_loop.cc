// generate_closed_loop: fusor's continuous-batching scheduler under bench/genai_peers/closed_loop.py's
// load, in this process, as the peers' drivers run theirs (OpenVINO GenAI's
// ContinuousBatchingPipeline, ONNX Runtime GenAI's Generator): a serve::GenerativeModel built as
// `fusor serve` builds it (default fusion; the default serve config, or CONFIG.yaml's serve
// section), minus HTTP and the client's process. bench/compare-generate-serving runs it as
// "fusor-inproc".
//   generate_closed_loop JOB.json [CONFIG.yaml]   ->   one JSON line on stdout (the drivers' format)
// Per level: each warm-up prompt first (untimed), then C requests in flight, the next submitted
// as soon as one ends. Token times are taken in the scheduler's callback, when a step hands the
// token out (what a streaming client sees, minus the wire).
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fusor/config.h"
#include "fusor/decoder.h"
#include "fusor/engine.h"
#include "fusor/error.h"
#include "fusor/threads.h"
#include "serve/generative_model.h"

using namespace fusor;
using Clock = std::chrono::steady_clock;

namespace {

struct Record {
  double submit_s = -1, first_token_s = -1, last_token_s = -1;
  std::vector<TokenId> output_ids;
};

// One level's closed loop; returns its result object.
nlohmann::json run_level(serve::GenerativeModel& model, const std::vector<std::vector<TokenId>>& prompts,
                         int64_t concurrency, int64_t max_new_tokens) {
  std::vector<Record> records(prompts.size());
  std::mutex mu;
  std::condition_variable finished_cv;
  std::deque<size_t> finished;  // requests whose on_done ran, for this thread to replace
  std::vector<std::string> failures;
  const auto t0 = Clock::now();
  auto now = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };

  size_t next = 0, in_flight = 0;
  auto submit = [&](size_t i) {
    serve::GenerationRequest r;
    r.prompt = prompts[i];
    r.options.max_new_tokens = max_new_tokens;
    r.options.ignore_eos = true;
    serve::GenerationEvents events;
    events.on_token = [&, i](TokenId id, std::string_view, bool) {
      const double t = now();
      std::lock_guard lock(mu);
      Record& rec = records[i];
      if (rec.first_token_s < 0) rec.first_token_s = t;
      rec.last_token_s = t;
      rec.output_ids.push_back(id);
    };
    events.on_done = [&, i](const serve::GenerationOutcome& o) {
      std::lock_guard lock(mu);
      if (!o.status.ok()) failures.push_back("request " + std::to_string(i) + ": " + o.status.message);
      finished.push_back(i);
      finished_cv.notify_one();
    };
    {
      std::lock_guard lock(mu);
      records[i].submit_s = now();
    }
    ++in_flight;
    model.submit(std::move(r), std::move(events));
  };
  while (next < prompts.size() && static_cast<int64_t>(in_flight) < concurrency) submit(next++);
  while (in_flight > 0) {
    {
      std::unique_lock lock(mu);
      finished_cv.wait(lock, [&] { return !finished.empty(); });
      in_flight -= finished.size();
      finished.clear();
      // After a failure nothing more is sent, and the requests still running are waited for:
      // their callbacks use this frame.
      if (!failures.empty()) next = prompts.size();
    }
    while (next < prompts.size() && static_cast<int64_t>(in_flight) < concurrency) submit(next++);
  }
  if (!failures.empty()) throw Error(failures.front());
  nlohmann::json requests = nlohmann::json::array();
  for (const Record& r : records)
    requests.push_back({{"submit_s", r.submit_s},
                        {"first_token_s", r.first_token_s},
                        {"last_token_s", r.last_token_s},
                        {"tokens", r.output_ids.size()},
                        {"output_ids", r.output_ids}});
  return {{"concurrency", concurrency}, {"wall_s", now()}, {"requests", requests}};
}

int run(const std::string& job_path, const std::string& config_path) {
  std::ifstream f(job_path);
  if (!f) throw Error("cannot read " + job_path);
  const nlohmann::json job = nlohmann::json::parse(f);
  const std::string model_file = DecoderSpec::model_file_of(job.at("model").get<std::string>());
  const int threads = job.at("threads").get<int>();
  const int64_t max_new_tokens = job.at("max_new_tokens").get<int64_t>();
  set_compute_threads(threads);
  const ServeConfig serve = config_path.empty() ? ServeConfig{} : load_config(config_path).serve;
  serve::GenerativeModel model("llama", Engine::load(model_file), model_file, serve, SessionOptions{}, threads,
                               /*announce=*/false);
  nlohmann::json levels = nlohmann::json::array();
  for (const auto& spec : job.at("levels")) {
    const int64_t c = spec.at("concurrency").get<int64_t>();
    if (job.contains("warmup")) run_level(model, job["warmup"].get<std::vector<std::vector<TokenId>>>(), c, max_new_tokens);
    nlohmann::json level = run_level(model, spec.at("prompts").get<std::vector<std::vector<TokenId>>>(), c, max_new_tokens);
    std::fprintf(stderr, "fusor-inproc: concurrency %lld: %.2f s\n", static_cast<long long>(c),
                 level["wall_s"].get<double>());
    levels.push_back(std::move(level));
  }
  const nlohmann::json result = {{"engine", "fusor-inproc"},
                                 {"version", ""},
                                 {"batching", "serve::GenerativeModel in process (fusor serve's scheduler, default "
                                              "serve config), " + std::to_string(threads) + " threads"},
                                 {"levels", levels}};
  std::cout << result.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: %s JOB.json [CONFIG.yaml]  (the job's format: bench/genai_peers/closed_loop.py)\n",
                 argv[0]);
    return 2;
  }
  try {
    return run(argv[1], argc == 3 ? argv[2] : "");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "generate_closed_loop: %s\n", e.what());
    return 1;
  }
}
