// kserve_json: the KServe v2 REST/JSON tensor path on MiniLM-sized requests, through the
// server's own functions: decoding an infer request (3 x INT64 [B,32]: input_ids,
// attention_mask, token_type_ids) and encoding the response (float32 [B,32,384]
// last_hidden_state) as JSON "data" and as Triton binary data. Issue 13 wants the whole
// protocol path well under a millisecond.
//   kserve_json [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <random>
#include <string>

#include "serve/json_infer.h"

using namespace fusor;
using namespace fusor::serve;

namespace {

constexpr int64_t kSeq = 32, kHidden = 384;

// The body a Python client (tritonclient.http) sends: flat "data" lists, one per input.
std::string request_body(int64_t batch) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> token(1000, 30521);
  auto input = [&](const char* name, auto value) {
    std::string s = R"({"name":")";
    s.append(name).append(R"(","shape":[)").append(std::to_string(batch)).append(",").append(std::to_string(kSeq));
    s.append(R"(],"datatype":"INT64","data":[)");
    for (int64_t i = 0; i < batch * kSeq; ++i) s.append(i ? "," : "").append(std::to_string(value()));
    return s.append("]}");
  };
  return R"({"id":"bench","inputs":[)" + input("input_ids", [&] { return token(rng); }) + "," +
         input("attention_mask", [] { return 1; }) + "," + input("token_type_ids", [] { return 0; }) + "]}";
}

// Hidden states look like unit-scale normals: 8-9 significant digits each when printed.
Tensor hidden_state(int64_t batch) {
  Tensor t(DType::Float32, {batch, kSeq, kHidden});
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 1.f);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = normal(rng);
  return t;
}

void BM_DecodeRequest(benchmark::State& state) {
  const std::string body = request_body(state.range(0));
  for (auto _ : state) {
    HttpInferRequest r = parse_infer_request(body, std::nullopt);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
  state.counters["body_bytes"] = static_cast<double>(body.size());
}

void encode(benchmark::State& state, bool binary) {
  Tensors outputs{{"last_hidden_state", hidden_state(state.range(0))}};
  HttpInferRequest req;
  req.id = "bench";
  req.outputs = {{"last_hidden_state", binary}};
  size_t bytes = 0;
  for (auto _ : state) {
    HttpBody b = infer_response("minilm", req, Signature{}, outputs);
    bytes = b.body.size();
    benchmark::DoNotOptimize(b);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * bytes));
  state.counters["body_bytes"] = static_cast<double>(bytes);
}

void BM_EncodeResponseJson(benchmark::State& state) { encode(state, false); }
void BM_EncodeResponseBinary(benchmark::State& state) { encode(state, true); }

}  // namespace

BENCHMARK(BM_DecodeRequest)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeResponseJson)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EncodeResponseBinary)->Arg(1)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();
