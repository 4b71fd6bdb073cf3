// Measures one generative setting on the real serving path in this process: a
// serve::GenerativeModel (the continuous-batching scheduler over one DecoderBatch) configured
// with the setting and a single traffic class, as fusor serve runs it, minus HTTP. Requests are
// random token prompts that each generate exactly `output_tokens` tokens (EOS ignored), so every
// setting sees the same work.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "fusor/engine.h"
#include "fusor/tuned_record.h"
#include "serve/generative_model.h"
#include "tune/load_bench.h"
#include "tune/token_sweep.h"

namespace fusor::tune {

struct GenerationLoad {
  Lengths prompt;             // prompt tokens, uniform over [min, max]
  int64_t output_tokens = 64;
};

class GenerationBench {
 public:
  // `serve`: the config the setting is laid over (kv_cache_tokens, the class's timeout); the
  // class `cls` alone is served, with the setting's max_running and prefill_chunk, and
  // serve.step_tokens = setting.step_tokens, serve.max_sequences = setting.max_running.
  GenerationBench(const Engine& engine, const std::string& model_file, const ServeConfig& serve,
                  const SessionOptions& options, int threads, const std::string& cls, const Setting& setting,
                  const Slo& slo, const GenerationLoad& load);
  ~GenerationBench();

  // Closed loop for `duration_s`: max_running requests always in flight. Its tokens per second
  // are the setting's peak, which later points' utilisation is a fraction of, and its request
  // rate the capacity search's starting prediction.
  CurvePoint saturate(double duration_s, const std::atomic<bool>& stop);
  // One open-loop run at `rate_qps` requests per second. utilisation = tokens per second over
  // the saturated peak (0 before saturate() ran); mean_batch stays 0.
  CurvePoint measure(double rate_qps, double duration_s, const ArrivalSource& arrivals, uint64_t seed,
                     const std::atomic<bool>& stop);

  const Setting& setting() const { return setting_; }
  const Slo& slo() const { return slo_; }

 private:
  struct Recorder;
  // Submits one request of the load; `done(ok)` runs once, on the scheduler's thread.
  void submit(Recorder& recorder, std::function<void(bool)> done);

  std::string cls_;
  Setting setting_;
  Slo slo_;
  GenerationLoad load_;
  int64_t vocab_ = 0;
  LengthDraw lengths_;
  std::mt19937_64 ids_;
  double peak_tokens_per_s_ = 0;
  std::unique_ptr<serve::GenerativeModel> model_;
};

}  // namespace fusor::tune
