// The real LLaMA-style export (models/llama-tiny, made by scripts/get-models), loaded once per
// test binary, and deterministic prompt ids for it: shared by the tests of the decode runtime.
#pragma once
#include <string>
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

}  // namespace fusor::test
