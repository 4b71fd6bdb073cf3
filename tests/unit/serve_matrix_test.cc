// serve.matrix: each batch-size bucket builds its sessions with its own fusion config, the saved
// verdict's rollbacks reach every bucket, and outputs stay correct whichever config ran them.
#include <gtest/gtest.h>

#include <algorithm>

#include "serve/served_model.h"
#include "chain_model.h"

namespace fusor::serve {
namespace {

Tensors request(int64_t rows) {
  Tensor x(DType::Float32, {rows, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i % 11) * 0.5f - 2.0f;
  return {{"x", x}};
}

void expect_chain_output(const Tensors& in, const Tensor& y) {
  const Tensor& x = in.at("x");
  ASSERT_EQ(y.dims(), x.dims());
  for (int64_t i = 0; i < x.numel(); ++i) EXPECT_EQ(y.data<float>()[i], std::max(0.0f, x.data<float>()[i] * 2 + 1)) << i;
}

ServeConfig matrix_config() {
  ServeConfig c;
  TrafficClass& d = c.classes.at("default");
  d.batch_window_ms = 0;
  d.max_batch = 8;
  d.preferred_batch_sizes = {1, 2, 4, 8};
  FusionConfig unfused_elemwise;
  unfused_elemwise.fuse_elemwise = false;
  c.matrix = {{1, unfused_elemwise}, {4, FusionConfig{}}};
  return c;
}

TEST(ServeMatrix, BucketsPickTheirFusionAndKeepTheVerdictsRollbacks) {
  SessionOptions base;
  base.fusion->disabled = {"rolled.back"};  // what apply_precision_verdict adds
  ServeConfig c = matrix_config();
  c.matrix[1].fusion.disabled = {"only.for.four"};
  OptionsMatrix m = OptionsMatrix::of(c, base);
  ASSERT_EQ(m.buckets.size(), 2u);
  EXPECT_FALSE(m.for_rows(1).fusion->fuse_elemwise);
  EXPECT_TRUE(m.for_rows(2).fusion->fuse_elemwise);
  EXPECT_EQ(m.for_rows(4).fusion->disabled, (std::vector<std::string>{"only.for.four", "rolled.back"}));
  EXPECT_EQ(m.for_rows(1).fusion->disabled, (std::vector<std::string>{"rolled.back"}));
  EXPECT_EQ(&m.for_rows(5), &m.fallback);  // beyond the last bucket: the top-level config
  EXPECT_EQ(m.describe(), (std::vector<std::string>{
                              "<=1: elemwise=0 norm_act=1 gemm_epilogue=1 attention=1 merge_projections=1 quantized=1 rotary=1 disabled=[rolled.back]",
                              "<=4: elemwise=1 norm_act=1 gemm_epilogue=1 attention=1 merge_projections=1 quantized=1 rotary=1 disabled=[only.for.four,rolled.back]",
                              ">4: elemwise=1 norm_act=1 gemm_epilogue=1 attention=1 merge_projections=1 quantized=1 rotary=1 disabled=[rolled.back]"}));
  // --no-fusion and --reference leave no buckets: the matrix cannot turn fusion back on.
  base.fusion.reset();
  EXPECT_TRUE(OptionsMatrix::of(c, base).buckets.empty());
}

// Token rows pick the options of packed plans by token capacity; batch rows stay for padded plans.
TEST(ServeMatrix, TokenRowsPickTheFusionOfPackedPlansByCapacity) {
  ServeConfig c = matrix_config();
  FusionConfig no_gelu;
  no_gelu.fuse_norm_act = false;
  MatrixEntry tokens{1, no_gelu};
  tokens.max_tokens = 256;
  c.matrix.push_back(tokens);
  OptionsMatrix m = OptionsMatrix::of(c, SessionOptions{});
  ASSERT_EQ(m.buckets.size(), 2u);
  ASSERT_EQ(m.token_buckets.size(), 1u);
  EXPECT_FALSE(m.for_tokens(64).fusion->fuse_norm_act);
  EXPECT_FALSE(m.for_tokens(256).fusion->fuse_norm_act);
  EXPECT_EQ(&m.for_tokens(257), &m.fallback);
  EXPECT_TRUE(m.for_rows(1).fusion->fuse_norm_act);  // the batch rows ignore it
}

TEST(ServeMatrix, BatchOfOneAndBatchOfEightRunDifferentlyFusedSessions) {
  ServeConfig c = matrix_config();
  c.matrix = {{1, c.matrix[0].fusion}, {8, FusionConfig{}}};
  Engine engine = Engine::load_bytes(chain_model());
  ServedModel model("chain", std::move(engine), c, SessionOptions{}, 1);
  for (int64_t rows : {1, 8}) {
    Tensors in = request(rows);
    Completion done = model.infer_sync(in, "");
    ASSERT_TRUE(done.status.ok()) << done.status.message;
    expect_chain_output(in, done.outputs.at("y"));
  }
  const auto& sessions = model.context(0).sessions();
  ASSERT_EQ(sessions.size(), 2u);
  std::map<int64_t, size_t> items, kernels;  // rows -> fused items, kernels in that session's plan
  for (const auto& [dims, session] : sessions) {
    items[dims.at("x")[0]] = session.fusion_items().size();
    kernels[dims.at("x")[0]] = session.kernels_per_inference();
  }
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(kernels.at(1), 3u);
  EXPECT_EQ(kernels.at(8), 1u);
  EXPECT_EQ(items.at(1), 0u) << "batches of 1 run with fuse_elemwise off";
  EXPECT_GT(items.at(8), 0u) << "batches of 8 run with the default fusion: the chain fuses";
}

// A model whose requests are never padded meets a new shape with nearly every request: its
// plans were kept forever (an audio model's grew past 1.8 GB).
TEST(ServeSessionCache, KeepsTheMostRecentlyUsedSessionsUpToItsLimit) {
  Engine engine = Engine::load_bytes(chain_model());
  auto matrix = std::make_shared<OptionsMatrix>(OptionsMatrix::of(ServeConfig{}, SessionOptions{}));
  SessionCache cache(engine, matrix, true);
  const int64_t shapes = SessionCache::kMaxSessions + 8;
  for (int64_t rows = 1; rows <= shapes; ++rows) {
    Tensors in = request(rows);
    expect_chain_output(in, cache.run(in).at("y"));
    if (rows % 4 == 0) cache.run(request(1));  // the first shape stays in use
  }
  EXPECT_EQ(cache.size(), SessionCache::kMaxSessions);
  EXPECT_EQ(cache.sessions().count({{"x", Dims{1, 4}}}), 1u) << "the shape in use was evicted";
  EXPECT_EQ(cache.sessions().count({{"x", Dims{2, 4}}}), 0u) << "the oldest unused shape was kept";
  EXPECT_EQ(cache.sessions().count({{"x", Dims{shapes, 4}}}), 1u);
}

}  // namespace
}  // namespace fusor::serve
