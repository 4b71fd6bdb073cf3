// Generated inputs are valid for the model: ids stay inside the table they index (also through
// a Cast), masks are ones, token type ids zeros, position ids count up after the past, and the
// same seed gives the same values.
#include <gtest/gtest.h>

#include <cstring>

#include "graph_builder.h"
#include "engine/sample_inputs.h"

namespace fusor {
namespace {

std::shared_ptr<Graph> embedding_graph() {
  test::GraphBuilder b;
  const Shape batch_by_seq{Dim{-1, "batch"}, Dim{-1, "sequence"}};
  int ids = b.input("input_ids", DType::Int64, batch_by_seq);
  int mask = b.input("attention_mask", DType::Int64, batch_by_seq);
  int types = b.input("token_type_ids", DType::Int64, batch_by_seq);
  int words = b.node(Op::Gather, {b.constant("word_embeddings", Tensor(DType::Float32, {50, 4})), ids}, "w");
  int cast = b.node(Op::Cast, {types}, "types64", DType::Int64, {{"to", DType::Int64}});
  int segs = b.node(Op::Gather, {b.constant("type_embeddings", Tensor(DType::Float32, {2, 4})), cast}, "t");
  return b.finish({b.node(Op::Add, {words, segs}, "y"), mask});
}

TEST(SampleInputs, ValidForTheModelAndDeterministic) {
  auto g = embedding_graph();
  EXPECT_EQ(index_bound(*g, g->find_value("input_ids")), 50);
  EXPECT_EQ(index_bound(*g, g->find_value("token_type_ids")), 2);  // found through the Cast
  std::map<std::string, Dims> dims{{"input_ids", {4, 64}}, {"attention_mask", {4, 64}}, {"token_type_ids", {4, 64}}};
  auto a = sample_inputs(*g, dims, 7), b = sample_inputs(*g, dims, 7);
  const auto* ids = a.at("input_ids").data<int64_t>();
  int64_t distinct_max = 0;
  for (int i = 0; i < 256; ++i) {
    ASSERT_GE(ids[i], 0);
    ASSERT_LT(ids[i], 50);
    distinct_max = std::max(distinct_max, ids[i]);
    EXPECT_EQ(a.at("attention_mask").data<int64_t>()[i], 1);
    EXPECT_EQ(a.at("token_type_ids").data<int64_t>()[i], 0);
  }
  EXPECT_GT(distinct_max, 25);  // spread over the table, not a constant
  EXPECT_EQ(std::memcmp(a.at("input_ids").raw(), b.at("input_ids").raw(), a.at("input_ids").nbytes()), 0);
}

// A decoder step of 3 tokens after a past of 2 (the mask has 5 columns) numbers them 2, 3, 4 in
// every row, as the decoder runtime does; inside a position table of 4 rows they wrap.
TEST(SampleInputs, PositionIdsCountUpAfterThePast) {
  test::GraphBuilder b;
  const int ids = b.input("input_ids", DType::Int64), mask = b.input("attention_mask", DType::Int64);
  const int positions = b.input("position_ids", DType::Int64);
  const int table = b.node(Op::Gather, {b.constant("wpe", Tensor(DType::Float32, {4, 2})), positions}, "p");
  auto g = b.finish({ids, mask, table});
  auto s = sample_inputs(*g, {{"input_ids", {2, 3}}, {"attention_mask", {2, 5}}, {"position_ids", {2, 3}}});
  const int64_t* p = s.at("position_ids").data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(p, p + 6), (std::vector<int64_t>{2, 3, 0, 2, 3, 0}));  // 4 wraps to 0
  auto first = sample_inputs(*g, {{"input_ids", {1, 3}}, {"attention_mask", {1, 3}}, {"position_ids", {1, 3}}});
  p = first.at("position_ids").data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(p, p + 3), (std::vector<int64_t>{0, 1, 2}));  // no past
  // A head mask [layers, heads] says nothing of the past.
  test::GraphBuilder hb;
  const int hp = hb.input("position_ids", DType::Int64);
  const int head_mask = hb.input("head_mask", DType::Int64);
  auto hg = hb.finish({hp, head_mask});
  first = sample_inputs(*hg, {{"position_ids", {1, 3}}, {"head_mask", {4, 9}}});
  p = first.at("position_ids").data<int64_t>();
  EXPECT_EQ(std::vector<int64_t>(p, p + 3), (std::vector<int64_t>{0, 1, 2}));  // no past
}

}  // namespace
}  // namespace fusor
