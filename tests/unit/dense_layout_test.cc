// Dense layouts (channels-last) through elementwise ops: the name helpers, and a MobileNetV3
// squeeze-excite block whose convolution output stays channels-last through the pooling, the
// per-channel scale and a unary op into the next convolution, computing what the reference does.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "fused_vs_reference.h"
#include "graph_builder.h"
#include "kernels/cpu/dense_layout.h"

namespace fusor {
namespace {

using test::GraphBuilder;
using V = std::vector<int64_t>;
const std::vector<int> kChannelsLast = {0, 2, 3, 1};

Tensor random(Dims dims, float scale, uint32_t seed) { return test::random_normal(std::move(dims), scale, seed); }

TEST(DenseLayout, NamesRoundTripAndRejectOthers) {
  EXPECT_EQ(cpu::dense_layout_order(cpu::dense_layout_name(kChannelsLast)), kChannelsLast);
  EXPECT_FALSE(cpu::dense_layout_order("dense:0,2,2,1"));  // not a permutation
  EXPECT_FALSE(cpu::dense_layout_order("dense:"));
  EXPECT_FALSE(cpu::dense_layout_order("f32:abcd:p,1,16,7,7:b,1x16:o0"));  // a blocked layout's name
}

TEST(DenseLayout, PerChannelAndSpatialTensorsReadAlikeFullOnesDoNot) {
  EXPECT_TRUE(cpu::reads_alike({2, 32, 1, 1}, kChannelsLast));
  EXPECT_TRUE(cpu::reads_alike({32, 1, 1}, kChannelsLast));  // right-aligned: [1, 32, 1, 1]
  EXPECT_TRUE(cpu::reads_alike({2, 1, 7, 7}, kChannelsLast));
  EXPECT_TRUE(cpu::reads_alike({}, kChannelsLast));
  EXPECT_FALSE(cpu::reads_alike({2, 32, 7, 7}, kChannelsLast));
  EXPECT_FALSE(cpu::reads_alike({32, 7, 1}, kChannelsLast));
  EXPECT_EQ(cpu::dims_in_order({2, 32, 7, 5}, kChannelsLast), (Dims{2, 7, 5, 32}));
}

TEST(DenseLayout, ConvertsChannelsLastToRowMajor) {
  const Dims dims = {2, 3, 2, 4};  // N C H W
  std::vector<float> stored(48), plain(48);
  for (size_t i = 0; i < stored.size(); ++i) stored[i] = static_cast<float>(i);  // N H W C order
  cpu::dense_to_plain(stored.data(), plain.data(), sizeof(float), dims, kChannelsLast);
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t w = 0; w < 4; ++w)
          EXPECT_EQ(plain[static_cast<size_t>(((n * 3 + c) * 2 + h) * 4 + w)],
                    stored[static_cast<size_t>(((n * 2 + h) * 4 + w) * 3 + c)]);
}

// A 1x1 Conv from ic to oc channels with seeded weights and bias, writing `out`.
int conv1x1(GraphBuilder& b, int in, int64_t oc, int64_t ic, const std::string& out, uint32_t seed) {
  return b.node(Op::Conv,
                {in, b.constant("W" + out, random({oc, ic, 1, 1}, 1.f / std::sqrt(static_cast<float>(ic)), seed)),
                 b.constant("B" + out, random({oc}, 0.5f, seed + 1))},
                out, DType::Float32, {{"kernel_shape", V{1, 1}}});
}

// h = HardSwish(Conv(x)); m = Abs(h * HardSigmoid(Conv(Relu(Conv(GlobalAveragePool(h)))))); y = Conv(m).
struct SqueezeExcite {
  std::shared_ptr<const Graph> graph;
  std::string h, m;
};

SqueezeExcite squeeze_excite(bool m_is_output) {
  GraphBuilder b;
  int x = b.input("x");
  auto conv = [&](int in, int64_t oc, int64_t ic, const std::string& out, uint32_t seed) {
    return conv1x1(b, in, oc, ic, out, seed);
  };
  int h = b.node(Op::HardSwish, {conv(x, 32, 16, "c1", 70)}, "h");
  int g = b.node(Op::GlobalAveragePool, {h}, "g");
  int r = b.node(Op::Relu, {conv(g, 8, 32, "c2", 72)}, "r");
  int s = b.node(Op::HardSigmoid, {conv(r, 32, 8, "c3", 74)}, "s", DType::Float32,
                 {{"alpha", 1.f / 6.f}, {"beta", 0.5f}});
  int m = b.node(Op::Abs, {b.node(Op::Mul, {h, s}, "hs")}, "m");
  int y = conv(m, 16, 32, "y", 76);
  auto graph = b.finish(m_is_output ? std::vector<int>{y, m} : std::vector<int>{y});
  return {graph, graph->values[static_cast<size_t>(h)].name, graph->values[static_cast<size_t>(m)].name};
}

std::set<std::string> blocked_values(const Plan& p) {
  std::set<std::string> names;
  for (size_t v = 0; v < p.blocked_by.size(); ++v)
    if (p.blocked_by[v]) names.insert(p.graph->values[v].name);
  return names;
}

bool first_conv_is_channels_last(const Plan& p) {
  return cpu::dense_layout_order(p.steps[0].kernel->offered_output_layout()) == kChannelsLast;
}

// Fused (HardSigmoid * h and Abs in one Elementwise kernel) or not (Mul and Abs kernels), the
// block runs channels-last from the first convolution to the last, and observers see row-major.
TEST(DenseLayout, SqueezeExciteStaysChannelsLastThroughElementwiseOps) {
  const SqueezeExcite se = squeeze_excite(false);
  for (bool fuse_elementwise : {true, false}) {
    FusionConfig c;
    c.fuse_elemwise = fuse_elementwise;
    for (int64_t batch : {1, 3}) {
      test::Feeds in = {{"x", random({batch, 16, 7, 5}, 1.f, 77)}};
      auto r = test::expect_fused_matches_reference(se.graph, in, c);
      if (!first_conv_is_channels_last(r.fused)) GTEST_SKIP() << "oneDNN picks no channels-last layout on this CPU";
      const auto blocked = blocked_values(r.fused);
      EXPECT_TRUE(blocked.count(se.h) && blocked.count(se.m)) << r.kernels();
      EXPECT_NE(r.kernels().find("reduce_mean_channels_last"), std::string::npos) << r.kernels();
      EXPECT_NE(r.kernels().find("conv2d_f32_bias_hardswish"), std::string::npos) << "HardSwish is an epilogue";
      auto fast_seen = test::observed_values(r.fused, in), ref_seen = test::observed_values(r.reference, in);
      for (const std::string& name : {se.h, se.m})
        EXPECT_TRUE(test::outputs_agree({fast_seen[name]}, {ref_seen[name]}, twin_tolerance(), {name}))
            << "as a step observer sees it";
    }
  }
}

// When m is also a graph output it must be row-major, so the elementwise ops cannot follow the
// layout, and h goes back to row-major with them.
TEST(DenseLayout, AValueThatMustBeRowMajorUndoesTheChainBeforeIt) {
  const SqueezeExcite se = squeeze_excite(true);
  FusionConfig c;
  c.fuse_elemwise = false;
  auto r = test::expect_fused_matches_reference(se.graph, {{"x", random({2, 16, 7, 5}, 1.f, 78)}}, c);
  if (!first_conv_is_channels_last(r.fused)) GTEST_SKIP() << "oneDNN picks no channels-last layout on this CPU";
  const auto blocked = blocked_values(r.fused);
  EXPECT_FALSE(blocked.count(se.h)) << r.kernels();
  EXPECT_FALSE(blocked.count(se.m)) << r.kernels();
}

// cat = Concat(Conv(x), Conv(x)) on channels; up = Resize(cat) 2x nearest; y = Conv(up): YOLO's
// neck. Concat and Resize follow the convolutions' channels-last layout, so nothing between the
// convolutions is reordered, and observers still see row-major values.
TEST(DenseLayout, ConcatAndResizeFollowChannelsLastBetweenConvolutions) {
  GraphBuilder b;
  int x = b.input("x");
  auto conv = [&](int in, int64_t oc, int64_t ic, const std::string& out, uint32_t seed) {
    return conv1x1(b, in, oc, ic, out, seed);
  };
  int cat = b.node(Op::Concat, {conv(x, 32, 16, "a", 80), conv(x, 16, 16, "b", 82)}, "cat", DType::Float32,
                   {{"axis", int64_t{1}}});
  Tensor scales(DType::Float32, {4});
  for (int i = 0; i < 4; ++i) scales.data<float>()[i] = i < 2 ? 1.f : 2.f;
  int up = b.node(Op::Resize, {cat, -1, b.constant("scales", scales)}, "up", DType::Float32,
                  {{"mode", std::string("nearest")}, {"coordinate_transformation_mode", std::string("asymmetric")},
                   {"nearest_mode", std::string("floor")}});
  auto graph = b.finish({conv(up, 16, 48, "y", 84)});
  test::Feeds in = {{"x", random({2, 16, 5, 7}, 1.f, 86)}};
  auto r = test::expect_fused_matches_reference(graph, in);
  if (!first_conv_is_channels_last(r.fused)) GTEST_SKIP() << "oneDNN picks no channels-last layout on this CPU";
  const auto blocked = blocked_values(r.fused);
  EXPECT_TRUE(blocked.count("cat") && blocked.count("up")) << r.kernels();
  auto fast_seen = test::observed_values(r.fused, in), ref_seen = test::observed_values(r.reference, in);
  for (const std::string& name : {"cat", "up"})
    EXPECT_TRUE(test::outputs_agree({fast_seen[name]}, {ref_seen[name]}, twin_tolerance(), {name}))
        << "as a step observer sees it";
}

// h = SiLU(Conv(x)) over a 3-channel image (3x3, stride 2, padded); y = Conv(h): a vision model's
// first layers. The first runs on the image-input kernel, reading the image row-major and writing
// h channels-last, or in oneDNN's blocked layout, whichever the next convolution reads (the first
// that it does), with its SiLU as an epilogue.
TEST(DenseLayout, ImageInputConvolutionWritesTheLayoutTheNextOneReads) {
  GraphBuilder b;
  int x = b.input("x");
  int c = b.node(Op::Conv, {x, b.constant("W1", random({16, 3, 3, 3}, 0.3f, 100)), b.constant("B1", random({16}, 0.5f, 101))},
                 "c", DType::Float32, {{"kernel_shape", V{3, 3}}, {"strides", V{2, 2}}, {"pads", V{1, 1, 1, 1}}});
  int h = b.node(Op::Mul, {c, b.node(Op::Sigmoid, {c}, "s")}, "h");
  auto graph = b.finish({conv1x1(b, h, 32, 16, "y", 102)});
  for (int64_t batch : {1, 3}) {
    test::Feeds in = {{"x", random({batch, 3, 21, 23}, 1.f, 103)}};
    auto r = test::expect_fused_matches_reference(graph, in);
    ASSERT_NE(r.kernels().find("conv2d_f32_bias_silu_image_input"), std::string::npos) << r.kernels();
    const Kernel &image = *r.fused.steps[0].kernel, &next = *r.fused.steps[1].kernel;
    std::vector<std::string> layouts{image.offered_output_layout()};
    for (const std::string& l : image.other_output_layouts()) layouts.push_back(l);
    ASSERT_EQ(layouts.size(), 2u);
    EXPECT_EQ(layouts[0], cpu::dense_layout_name(kChannelsLast));
    const auto read = std::find_if(layouts.begin(), layouts.end(), [&](const std::string& l) { return next.accepts_input_layout(0, l); });
    EXPECT_EQ(blocked_values(r.fused).count("h"), read != layouts.end() ? 1u : 0u) << r.kernels();
    auto fast_seen = test::observed_values(r.fused, in), ref_seen = test::observed_values(r.reference, in);
    EXPECT_TRUE(test::outputs_agree({fast_seen["h"]}, {ref_seen["h"]}, twin_tolerance(), {"h"}))
        << "as a step observer sees it";
  }
}

// YOLO's C2f block: h = Conv(x) split on channels into a and b; r = b + Conv(b); y =
// Conv(Concat(a, b, r)). `sizes` are the split's channel counts; `a_is_output` makes part a a
// graph output too.
std::shared_ptr<const Graph> c2f_block(std::vector<int64_t> sizes, bool a_is_output) {
  GraphBuilder b;
  int x = b.input("x");
  const int64_t c = sizes[0] + sizes[1];
  Tensor split(DType::Int64, {2});
  std::copy(sizes.begin(), sizes.end(), split.data<int64_t>());
  const auto parts = b.node_outputs(Op::Split, {conv1x1(b, x, c, 8, "h", 90), b.constant("sizes", split)}, {"a", "b"},
                                    {{"axis", int64_t{1}}});
  int r = b.node(Op::Add, {parts[1], conv1x1(b, parts[1], sizes[1], sizes[1], "m", 92)}, "r");
  int cat = b.node(Op::Concat, {parts[0], parts[1], r}, "cat", DType::Float32, {{"axis", int64_t{1}}});
  int y = conv1x1(b, cat, 8, c + sizes[1], "y", 94);
  return b.finish(a_is_output ? std::vector<int>{y, parts[0]} : std::vector<int>{y});
}

// Split follows the convolution's channels-last layout into both parts, so the residual Add and
// the Concat follow too and nothing in the block is reordered, whether the channel counts are
// multiples of a vector width or not; observers still see row-major parts.
TEST(DenseLayout, SplitFollowsChannelsLastIntoEveryPart) {
  for (const std::vector<int64_t>& sizes : {std::vector<int64_t>{16, 16}, std::vector<int64_t>{5, 11}}) {
    test::Feeds in = {{"x", random({3, 8, 6, 5}, 1.f, 96)}};
    auto r = test::expect_fused_matches_reference(c2f_block(sizes, false), in);
    if (!first_conv_is_channels_last(r.fused)) GTEST_SKIP() << "oneDNN picks no channels-last layout on this CPU";
    const auto blocked = blocked_values(r.fused);
    for (const char* name : {"h", "a", "b", "r", "cat"}) EXPECT_TRUE(blocked.count(name)) << name << ": " << r.kernels();
    auto fast_seen = test::observed_values(r.fused, in), ref_seen = test::observed_values(r.reference, in);
    for (const std::string& name : {"a", "b", "r", "cat"})
      EXPECT_TRUE(test::outputs_agree({fast_seen[name]}, {ref_seen[name]}, twin_tolerance(), {name}))
          << name << " as a step observer sees it, split " << sizes[0] << "+" << sizes[1];
  }
}

// The layout decision at the kernel: Split follows a dense layout of its whole's rank (any
// channel counts: a part is a run of channels at every pixel), takes its whole in it but not its
// sizes, and refuses a blocked layout such as nChw16c, whose name carries the whole's dims.
TEST(DenseLayout, SplitFollowsDenseLayoutsButNotBlockedOnes) {
  Node n;
  n.name = "split";
  n.op = Op::Split;
  n.op_type = op_info(Op::Split).name;
  n.opset = 13;
  n.attrs = {{"axis", int64_t{1}}};
  n.inputs = {0, 1};
  n.outputs = {2, 3};
  Tensor sizes(DType::Int64, {2});
  sizes.data<int64_t>()[0] = 5;
  sizes.data<int64_t>()[1] = 11;
  const std::vector<TensorType> ins = {{DType::Float32, {2, 16, 6, 5}}, {DType::Int64, {2}}};
  const std::vector<TensorType> outs = {{DType::Float32, {2, 5, 6, 5}}, {DType::Float32, {2, 11, 6, 5}}};
  const std::vector<const Tensor*> consts = {nullptr, &sizes};
  auto k = cpu::backend().select(KernelRequest{n, ins, consts, outs}).kernel;
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->follows_layout(cpu::dense_layout_name(kChannelsLast))) << k->name();
  EXPECT_FALSE(k->follows_layout(cpu::dense_layout_name({0, 2, 1})));  // another rank
  EXPECT_FALSE(k->follows_layout("t1:2,16,6,5:s,480,1,80,16:blocked:p,2,16,6,5:b,1x16:o0"));  // nChw16c
  EXPECT_TRUE(k->follows_input(0));
  EXPECT_FALSE(k->follows_input(1));
}

// A follower writes all its outputs in one layout: when part a must be row-major (a graph
// output), part b goes back with it, and so do the Split's input and the followers of b.
TEST(DenseLayout, OnePartThatMustBeRowMajorKeepsEveryPartRowMajor) {
  auto r = test::expect_fused_matches_reference(c2f_block({16, 16}, true), {{"x", random({2, 8, 6, 5}, 1.f, 98)}});
  if (!first_conv_is_channels_last(r.fused)) GTEST_SKIP() << "oneDNN picks no channels-last layout on this CPU";
  const auto blocked = blocked_values(r.fused);
  for (const char* name : {"h", "a", "b", "r", "cat"}) EXPECT_FALSE(blocked.count(name)) << name << ": " << r.kernels();
}

}  // namespace
}  // namespace fusor
