// The real LLaMA-style export (models/llama-tiny, made by scripts/get-models), loaded once per
// test binary, deterministic prompt ids for it, and a step stopped midway: shared by the tests
// of the decode runtime.
#pragma once
#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "fusor/decoder.h"

namespace fusor::test {

inline const std::string kLlamaTiny = std::string(FUSOR_SOURCE_DIR) + "/models/llama-tiny";

inline const Engine& llama_tiny_engine() {
  static const Engine e = Engine::load(kLlamaTiny + "/model.onnx");
  return e;
}

inline const DecoderSpec& llama_tiny_spec() {
  static const DecoderSpec s = DecoderSpec::describe(llama_tiny_engine(), kLlamaTiny + "/model.onnx");
  return s;
}

// `n` ids in [3, 8003), a different sequence per `seed`.
inline std::vector<TokenId> prompt_ids(int n, int seed) {
  std::vector<TokenId> v;
  for (int i = 0; i < n; ++i) v.push_back(static_cast<TokenId>(3 + (seed * 7919 + i * 104729) % 8000));
  return v;
}

// Steps `feed` alone with a stop flag raised after a shrinking delay (3 ms down to 0.1 ms),
// resetting its sequence after each step that ran through, until a step stops midway; whether
// one did. The step must be long enough to stop (a prompt of several chunks).
inline bool step_stopped_midway(DecoderBatch& batch, const DecoderBatch::Feed& feed) {
  std::atomic<bool> stop{false};
  for (int delay_us = 3000; delay_us >= 100; delay_us /= 2) {
    stop = false;
    std::thread setter([&] {
      std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
      stop = true;
    });
    const bool stopped = batch.step({&feed, 1}, &stop).empty();
    setter.join();
    if (stopped) return true;
    batch.reset(feed.sequence);  // it ran through: try again with the flag raised sooner
  }
  return false;
}

}  // namespace fusor::test
