// The profiler's cost model (hand-counted FLOPs and bytes) and its aggregation arithmetic.
#include <gtest/gtest.h>

#include <algorithm>

#include "profile/ceilings.h"
#include "profile/cost.h"
#include "profile/profiler.h"

namespace fusor {
namespace {

Node node_of(Op op, std::map<std::string, Attribute> attrs = {}) {
  Node n;
  n.op = op;
  n.op_type = op_info(op).name;
  n.attrs = std::move(attrs);
  return n;
}

TensorType f32(Dims d) { return {DType::Float32, std::move(d)}; }

TEST(ProfileCost, MatMulBatchedIsTwoMKNPerBatch) {
  // [2, 12, 16, 32] x [2, 12, 32, 16] -> [2, 12, 16, 16]: 24 GEMMs of 16x32x16.
  std::vector<TensorType> in = {f32({2, 12, 16, 32}), f32({2, 12, 32, 16})}, out = {f32({2, 12, 16, 16})};
  StepCost c = step_cost(node_of(Op::MatMul), in, out);
  EXPECT_DOUBLE_EQ(c.flops, 24.0 * 2 * 16 * 32 * 16);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (2 * 12 * 16 * 32 + 2 * 12 * 32 * 16));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 2 * 12 * 16 * 16);
}

TEST(ProfileCost, MatMulAgainstWeights) {
  // [1, 128, 384] x [384, 1536]: M = 128, K = 384, N = 1536.
  std::vector<TensorType> in = {f32({1, 128, 384}), f32({384, 1536})}, out = {f32({1, 128, 1536})};
  StepCost c = step_cost(node_of(Op::MatMul), in, out);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 128 * 384 * 1536);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (128 * 384 + 384 * 1536));
  EXPECT_DOUBLE_EQ(c.bytes(), 4.0 * (128 * 384 + 384 * 1536 + 128 * 1536));
}

TEST(ProfileCost, GemmTransposedWithBias) {
  // ResNet's classifier: A [8, 512], B [1000, 512] with transB, C [1000] -> [8, 1000].
  std::vector<TensorType> in = {f32({8, 512}), f32({1000, 512}), f32({1000})}, out = {f32({8, 1000})};
  StepCost c = step_cost(node_of(Op::Gemm, {{"transB", int64_t{1}}}), in, out);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 8 * 512 * 1000 + 8 * 1000);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (8 * 512 + 1000 * 512 + 1000));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 8 * 1000);

  // transA: A is [K, M] = [512, 8]; no C.
  std::vector<TensorType> in2 = {f32({512, 8}), f32({512, 1000})};
  StepCost c2 = step_cost(node_of(Op::Gemm, {{"transA", int64_t{1}}}), in2, out);
  EXPECT_DOUBLE_EQ(c2.flops, 2.0 * 8 * 512 * 1000);
}

TEST(ProfileCost, ConvCountsChannelsPerGroupTimesKernel) {
  // ResNet's stem: [1, 3, 224, 224] * W [64, 3, 7, 7] + b -> [1, 64, 112, 112].
  std::vector<TensorType> in = {f32({1, 3, 224, 224}), f32({64, 3, 7, 7}), f32({64})};
  std::vector<TensorType> out = {f32({1, 64, 112, 112})};
  StepCost c = step_cost(node_of(Op::Conv), in, out);
  const double outputs = 64.0 * 112 * 112;
  EXPECT_DOUBLE_EQ(c.flops, outputs * 2 * 3 * 7 * 7 + outputs);  // 236,027,904 MAC FLOPs + 802,816 bias adds
  EXPECT_DOUBLE_EQ(c.flops, 236830720.0);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (3 * 224 * 224 + 64 * 3 * 7 * 7 + 64));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * outputs);

  // Depthwise, no bias: W [32, 1, 3, 3], group 32 -> 9 MACs per output.
  std::vector<TensorType> dw = {f32({1, 32, 10, 10}), f32({32, 1, 3, 3})}, dwo = {f32({1, 32, 8, 8})};
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::Conv, {{"group", int64_t{32}}}), dw, dwo).flops, 32.0 * 64 * 2 * 9);
}

// A transposed convolution scatters each input element through M/group * prod(kernel) weights:
// U-Net's 2x up-sampling [1, 64, 8, 8] * W [64, 32, 2, 2] stride 2 -> [1, 32, 16, 16].
TEST(ProfileCost, ConvTransposeCountsPerInputElement) {
  std::vector<TensorType> in = {f32({1, 64, 8, 8}), f32({64, 32, 2, 2}), f32({32})};
  std::vector<TensorType> out = {f32({1, 32, 16, 16})};
  const double inputs = 64.0 * 8 * 8, outputs = 32.0 * 16 * 16;
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::ConvTranspose), in, out).flops, inputs * 2 * 32 * 2 * 2 + outputs);
  // Every output gets C * prod(k) / stride^2 MACs here, the same work as the Conv it inverts.
  EXPECT_DOUBLE_EQ(inputs * 32 * 2 * 2, outputs * 64);
}

TEST(ProfileCost, ElementwiseAndBroadcast) {
  // Add with a broadcast bias: one FLOP per output element; reads both inputs once.
  std::vector<TensorType> in = {f32({1, 16, 384}), f32({384})}, out = {f32({1, 16, 384})};
  StepCost c = step_cost(node_of(Op::Add), in, out);
  EXPECT_DOUBLE_EQ(c.flops, 16.0 * 384);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (16 * 384 + 384));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 16 * 384);

  std::vector<TensorType> u = {f32({4, 100})};
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::Erf), u, u).flops, 400.0);
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::Relu), u, u).flops, 400.0);
  // A unary op counts its formula (the elementwise table): 1 / (1 + exp(-x)) is 4 per element.
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::Sigmoid), u, u).flops, 1600.0);
  // Pure data movement: no FLOPs, bytes both ways.
  StepCost copy = step_cost(node_of(Op::Identity), u, u);
  EXPECT_DOUBLE_EQ(copy.flops, 0.0);
  EXPECT_DOUBLE_EQ(copy.bytes(), 2.0 * 1600);
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::Transpose), u, std::vector<TensorType>{f32({100, 4})}).flops, 0.0);
}

TEST(ProfileCost, SoftmaxAndLayerNorm) {
  std::vector<TensorType> s = {f32({1, 12, 128, 128})};
  StepCost c = step_cost(node_of(Op::Softmax), s, s);
  EXPECT_DOUBLE_EQ(c.flops, 5.0 * 12 * 128 * 128);
  EXPECT_DOUBLE_EQ(c.bytes(), 2.0 * 4 * 12 * 128 * 128);

  std::vector<TensorType> ln = {f32({2, 8, 384}), f32({384}), f32({384})}, lo = {f32({2, 8, 384})};
  StepCost l = step_cost(node_of(Op::LayerNormalization), ln, lo);
  EXPECT_DOUBLE_EQ(l.flops, 8.0 * 2 * 8 * 384);
  EXPECT_DOUBLE_EQ(l.bytes_read, 4.0 * (2 * 8 * 384 + 2 * 384));
}

TEST(ProfileCost, GatherReadsOnlyTheGatheredRows) {
  // An embedding table of 30522 x 384 gathered by 16 int64 ids: the table is not streamed.
  std::vector<TensorType> in = {f32({30522, 384}), {DType::Int64, {1, 16}}}, out = {f32({1, 16, 384})};
  StepCost c = step_cost(node_of(Op::Gather), in, out);
  EXPECT_DOUBLE_EQ(c.flops, 0.0);
  EXPECT_DOUBLE_EQ(c.bytes_read, 8.0 * 16 + 4.0 * 16 * 384);
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 16 * 384);
}

TEST(ProfileCost, ReductionsAndPools) {
  std::vector<TensorType> in = {f32({2, 16, 384})}, out = {f32({2, 16, 1})};
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::ReduceMean), in, out).flops, 2.0 * 16 * 384);
  std::vector<TensorType> pin = {f32({1, 64, 112, 112})}, pout = {f32({1, 64, 56, 56})};
  EXPECT_DOUBLE_EQ(step_cost(node_of(Op::MaxPool, {{"kernel_shape", std::vector<int64_t>{3, 3}}}), pin, pout).flops,
                   64.0 * 56 * 56 * 9);
}

TEST(ProfileAggregate, MediansSharesAndRoofline) {
  Ceilings ceil;
  ceil.copy_gbps = 10;      // balance 10 FLOP/B
  ceil.sgemm_gflops = 100;
  std::vector<StepInfo> steps(3);
  steps[0] = {"gemm_a", "MatMul", "n0", "[1] -> [1]", {1e9, 1e7, 0}};  // 100 FLOP/B: compute-bound
  steps[1] = {"add_b", "Add", "n1", "", {1e6, 8e6, 4e6}};    // 0.08 FLOP/B: memory-bound
  steps[2] = {"gemm_a", "MatMul", "n2", "[2] -> [2]", {1e9, 1e7, 0}};
  // Three runs; per-run kernel sums for gemm_a are 3, 4, 10 ms -> median 4 ms.
  std::vector<std::vector<double>> t = {{1e-3, 1e-3, 2e-3}, {2e-3, 5e-3, 2e-3}, {5e-3, 2e-3, 5e-3}};
  auto rows = aggregate(steps, t, GroupBy::Kernel, 8.0, ceil);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].name, "gemm_a");
  EXPECT_EQ(rows[0].calls, 2);
  EXPECT_NEAR(rows[0].time_ms, 4.0, 1e-9);
  EXPECT_NEAR(rows[0].share, 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(rows[0].flops, 2e9);
  EXPECT_NEAR(rows[0].gflops, 2e9 / 4e-3 / 1e9, 1e-6);
  EXPECT_EQ(rows[0].bound, "compute");
  EXPECT_EQ(rows[1].name, "add_b");
  EXPECT_NEAR(rows[1].time_ms, 2.0, 1e-9);
  EXPECT_NEAR(rows[1].gbps, 12e6 / 2e-3 / 1e9, 1e-9);
  EXPECT_EQ(rows[1].bound, "memory");

  auto ops = aggregate(steps, t, GroupBy::Op, 8.0, ceil);
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "MatMul");
  EXPECT_EQ(ops[0].op, "MatMul");

  auto by_shape = aggregate(steps, t, GroupBy::KernelAndShapes, 8.0, ceil);
  ASSERT_EQ(by_shape.size(), 3u);
  auto first = std::find_if(by_shape.begin(), by_shape.end(), [](const ProfileRow& r) { return r.name == "gemm_a [1] -> [1]"; });
  ASSERT_NE(first, by_shape.end());
  EXPECT_EQ(first->calls, 1);
  EXPECT_NEAR(first->time_ms, 2.0, 1e-9);  // runs 1, 2, 5 ms
}

TEST(ProfileCeilings, CacheKeyAndMeasuredValuesArePositive) {
  EXPECT_EQ(ceilings_cache_key("AMD EPYC", 2, false), "AMD EPYC|threads=2|full");
  EXPECT_EQ(ceilings_cache_dir("/tmp/x"), "/tmp/x");
  EXPECT_GT(measure_copy_gbps(1 << 20, 2), 0.0);
  EXPECT_GT(measure_sgemm_gflops(64, 2), 0.0);
}

}  // namespace
}  // namespace fusor
