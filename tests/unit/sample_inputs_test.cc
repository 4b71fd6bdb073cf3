// Generated inputs are valid for the model: ids stay inside the table they index (also through
// a Cast), masks are ones, token type ids zeros, and the same seed gives the same values.
#include <gtest/gtest.h>

#include <cstring>

#include "runtime/sample_inputs.h"

namespace fusor {
namespace {

std::shared_ptr<Graph> embedding_graph() {
  auto g = std::make_shared<Graph>();
  g->opset = 17;
  auto input = [&](const char* name) {
    Value v;
    v.name = name;
    v.dtype = DType::Int64;
    v.shape = Shape{Dim{-1, "batch"}, Dim{-1, "sequence"}};
    int id = g->add_value(v);
    g->inputs.push_back(id);
    return id;
  };
  auto table = [&](const char* name, int64_t rows) {
    Value v;
    v.name = name;
    v.dtype = DType::Float32;
    v.constant = Tensor(DType::Float32, {rows, 4});
    return g->add_value(v);
  };
  auto node = [&](Op op, std::vector<int> in, const char* out, DType t = DType::Float32) {
    Node n;
    n.op = op;
    n.op_type = op_info(op).name;
    n.name = out;
    n.opset = 17;
    n.inputs = in;
    Value v;
    v.name = out;
    v.dtype = t;
    v.producer = static_cast<int>(g->nodes.size());
    n.outputs = {g->add_value(v)};
    if (op == Op::Cast) n.attrs["to"] = int64_t{7};
    g->nodes.push_back(n);
    return n.outputs[0];
  };
  int ids = input("input_ids"), mask = input("attention_mask"), types = input("token_type_ids");
  int words = node(Op::Gather, {table("word_embeddings", 50), ids}, "w");
  int cast = node(Op::Cast, {types}, "types64", DType::Int64);
  int segs = node(Op::Gather, {table("type_embeddings", 2), cast}, "t");
  g->outputs = {node(Op::Add, {words, segs}, "y"), mask};
  return g;
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

}  // namespace
}  // namespace fusor
