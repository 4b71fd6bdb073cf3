// The Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions (kernels/cpu/conv_winograd.cc) against the reference
// Conv: odd and even output sizes (partial tiles), pads of 0, 1 and uneven, one and several
// images, channel counts of one and several vector blocks and channel blocks, with bias, residual
// and activations, its input, residual and output row-major or in the blocked layout it offers.
// Built with the tile size given, so that it is tested on CPUs where the backend picks oneDNN's
// Winograd.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ir/graph.h"
#include "ir/op_table.h"
#include "kernels/cpu/conv_onednn.h"
#include "kernels/cpu/onednn_context.h"
#include "kernels/cpu/onednn_plain_io.h"
#include "kernels/cpu/simd.h"
#include "kernels/cpu/packed_weights.h"
#include "kernels/ref/reference.h"
#include "fused_vs_reference.h"
#include "graph_builder.h"

namespace fusor {
namespace {

using V = std::vector<int64_t>;

struct Layer {
  int64_t n, c, oc, h, w;
  V pads = {1, 1, 1, 1};
};

struct Epilogue {
  bool bias = true, residual = false;
  std::string activation = "none";
  float alpha = 0.f;
};

Tensor random(Dims dims, float scale, uint32_t seed) { return test::random_normal(std::move(dims), scale, seed); }

Dims out_dims(const Layer& l) { return {l.n, l.oc, l.h + l.pads[0] + l.pads[2] - 2, l.w + l.pads[1] + l.pads[3] - 2}; }

Node conv_node(const Layer& l) {
  Node n;
  n.name = "conv";
  n.op = Op::Conv;
  n.op_type = op_info(Op::Conv).name;
  n.opset = 17;
  n.attrs = {{"pads", l.pads}, {"kernel_shape", V{3, 3}}};
  n.inputs = {0, 1, 2};
  n.outputs = {3};
  return n;
}

// Conv (with bias) by the reference kernels, then the residual and the activation in double.
Tensor expected(const Layer& l, const Epilogue& e, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& res) {
  std::vector<Tensor> out = {Tensor(DType::Float32, out_dims(l))};
  ref::evaluate(conv_node(l), std::vector<Tensor>{x, w, b}, out);
  float* y = out[0].data<float>();
  for (int64_t i = 0; i < out[0].numel(); ++i) {
    double v = y[i];
    if (e.residual) v += res.data<float>()[i];
    if (e.activation == "relu") v = std::max(v, 0.0);
    if (e.activation == "leaky_relu" && v < 0) v *= e.alpha;
    y[i] = static_cast<float>(v);
  }
  return out[0];
}

// `tile` 2 or 4: F(tile x tile, 3x3) whatever the CPU and the tiles; 0: the backend's choice.
std::unique_ptr<Kernel> winograd(const Layer& l, const Epilogue& e, const Tensor& w, const Tensor& b, int tile) {
  Node n = conv_node(l);
  const std::vector<TensorType> ins = {{DType::Float32, {l.n, l.c, l.h, l.w}},
                                       {DType::Float32, {l.oc, l.c, 3, 3}},
                                       {DType::Float32, {l.oc}},
                                       {DType::Float32, out_dims(l)}};
  const std::vector<TensorType> outs = {{DType::Float32, out_dims(l)}};
  const std::vector<const Tensor*> consts = {nullptr, &w, &b, nullptr};
  cpu::ConvEpilogue epi{.has_bias = true, .residual = e.residual ? 3 : -1, .activation = e.activation, .alpha = e.alpha};
  return cpu::make_winograd_conv(KernelRequest{n, ins, consts, outs}, epi, tile);
}

// The blocked layout of the direct convolutions on this CPU's vectors (nChw8c or nChw16c).
dnnl::memory::desc blocked_desc(const Dims& dims) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), dnnl::memory::data_type::f32,
                            L == 8 ? dnnl::memory::format_tag::nChw8c : dnnl::memory::format_tag::nChw16c);
}

// A plain NCHW tensor reordered to / from that layout.
Tensor reordered(const Tensor& t, bool to_blocked) {
  using dnnl::memory;
  const memory::desc plain(memory::dims(t.dims().begin(), t.dims().end()), memory::data_type::f32,
                           memory::format_tag::nchw),
      blocked = blocked_desc(t.dims());
  Tensor out(DType::Float32, t.dims());
  auto& eng = cpu::onednn::engine();
  memory from(to_blocked ? plain : blocked, eng, const_cast<void*>(t.raw())), to(to_blocked ? blocked : plain, eng, out.raw());
  cpu::onednn::execute_reorder(dnnl::reorder(from, to), from, to);
  cpu::onednn::stream().wait();
  return out;
}

// Runs the kernel twice (no state between runs may change the result) with each of input,
// residual and output row-major or blocked, and checks every combination against the reference.
void expect_matches_reference(const Layer& l, const Epilogue& e, uint32_t seed, int tile) {
  SCOPED_TRACE("F(" + std::to_string(tile) + "x" + std::to_string(tile) + ", 3x3) n" + std::to_string(l.n) + " c" +
               std::to_string(l.c) + " oc" + std::to_string(l.oc) + " " + std::to_string(l.h) + "x" + std::to_string(l.w) +
               " " + e.activation + (e.residual ? " residual" : ""));
  const Tensor x = random({l.n, l.c, l.h, l.w}, 1.f, seed);
  const Tensor w = random({l.oc, l.c, 3, 3}, 1.f / std::sqrt(9.f * l.c), seed + 1);
  const Tensor b = random({l.oc}, e.bias ? 0.5f : 0.f, seed + 2);
  const Tensor res = random(out_dims(l), 1.f, seed + 3);
  const Tensor want = expected(l, e, x, w, b, res);
  for (int blocked = 0; blocked < 8; ++blocked) {
    const bool src_blocked = blocked & 1, acc_blocked = blocked & 2, dst_blocked = blocked & 4;
    if (acc_blocked && !e.residual) continue;
    auto k = winograd(l, e, w, b, tile);
    ASSERT_TRUE(k);
    EXPECT_NE(k->name().find("winograd_f" + std::to_string(tile) + "x3"), std::string::npos) << k->name();
    const std::string src_name = cpu::onednn_layout_name(blocked_desc(x.dims()));
    EXPECT_EQ(k->offered_output_layout(), cpu::onednn_layout_name(blocked_desc(out_dims(l))));
    EXPECT_TRUE(k->accepts_input_layout(0, src_name));
    EXPECT_EQ(k->accepts_input_layout(3, k->offered_output_layout()), e.residual);
    const std::string src_layout = src_blocked ? src_name : "";
    const std::string acc_layout = acc_blocked ? k->offered_output_layout() : "";
    std::vector<std::string> layouts = {src_layout, "", "", acc_layout};
    k->use_layouts(layouts, dst_blocked);
    std::vector<Tensor> in = {src_blocked ? reordered(x, true) : x, w, b, acc_blocked ? reordered(res, true) : res};
    std::vector<Tensor> out = {Tensor(DType::Float32, out_dims(l))};
    Tensor scratch(DType::UInt8, {static_cast<int64_t>(k->scratch_bytes()) + 1});
    std::span<std::byte> scratch_span(static_cast<std::byte*>(scratch.raw()), k->scratch_bytes());
    for (int run = 0; run < 2; ++run) {
      k->run(in, out, scratch_span);
      Tensor got = out[0];
      if (dst_blocked) {
        got = Tensor(DType::Float32, out_dims(l));
        k->output_to_plain(out[0], got);
        EXPECT_TRUE(test::outputs_agree({reordered(out[0], false)}, {got}, twin_tolerance()))
            << "output_to_plain is the blocked layout's reorder";
      }
      EXPECT_TRUE(test::outputs_agree({got}, {want}, twin_tolerance()))
          << "src " << src_blocked << " residual " << acc_blocked << " dst " << dst_blocked << " run " << run;
    }
  }
}

void expect_matches_reference(const Layer& l, const Epilogue& e, uint32_t seed) {
  for (int tile : {2, 4}) expect_matches_reference(l, e, seed, tile);
}

TEST(ConvWinograd, MatchesReferenceOverShapes) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  uint32_t seed = 10;
  for (const Layer& l : {Layer{1, L, L, 8, 8}, Layer{1, 2 * L, 3 * L, 7, 7}, Layer{2, L, 2 * L, 9, 5},
                         Layer{1, 4 * L, 4 * L, 14, 14}, Layer{3, 2 * L, L, 6, 11, {0, 0, 0, 0}},
                         Layer{1, L, L, 5, 6, {1, 0, 2, 1}}, Layer{1, 8 * L, 16 * L, 3, 3}, Layer{1, L, L, 1, 1}})
    expect_matches_reference(l, Epilogue{}, seed += 10);
}

TEST(ConvWinograd, EpiloguesMatchReference) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  const Layer l{2, 2 * L, 2 * L, 7, 9};
  expect_matches_reference(l, Epilogue{.activation = "relu"}, 1);
  expect_matches_reference(l, Epilogue{.residual = true, .activation = "relu"}, 2);
  expect_matches_reference(l, Epilogue{.bias = false, .residual = true}, 3);
  expect_matches_reference(l, Epilogue{.activation = "leaky_relu", .alpha = 0.1f}, 4);
}

// Enough work items for both threads even when the tiles fit one chunk: the output channels split.
TEST(ConvWinograd, ManyChannelsFewTilesSplitsTheChannels) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  expect_matches_reference(Layer{1, 32 * L, 32 * L, 4, 4}, Epilogue{.residual = true, .activation = "relu"}, 5);
}

TEST(ConvWinograd, DeclinesWhatItDoesNotCompute) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  auto declines = [&](Layer l, const std::string& attr, V value, const Epilogue& e = {}) {
    Node n = conv_node(l);
    if (!attr.empty()) n.attrs[attr] = value;
    const int64_t kh = attr == "kernel_shape" ? value[0] : 3;
    const std::vector<TensorType> ins = {{DType::Float32, {l.n, l.c, l.h, l.w}}, {DType::Float32, {l.oc, l.c, kh, kh}},
                                         {DType::Float32, {l.oc}}};
    const int64_t stride = attr == "strides" ? value[0] : 1;
    const std::vector<TensorType> outs = {{DType::Float32, {l.n, l.oc, (l.h + 2 - kh) / stride + 1, (l.w + 2 - kh) / stride + 1}}};
    const Tensor w = random({l.oc, l.c, kh, kh}, 0.1f, 1), b = random({l.oc}, 0.1f, 2);
    const std::vector<const Tensor*> consts = {nullptr, &w, &b};
    return cpu::make_winograd_conv(KernelRequest{n, ins, consts, outs},
                                   cpu::ConvEpilogue{.has_bias = true, .activation = e.activation}, 2) == nullptr;
  };
  const Layer ok{1, L, L, 8, 8};
  EXPECT_FALSE(declines(ok, "", {}));
  EXPECT_TRUE(declines(ok, "strides", {2, 2}));
  EXPECT_TRUE(declines(ok, "dilations", {2, 2}));
  EXPECT_TRUE(declines(ok, "kernel_shape", {5, 5}));
  EXPECT_TRUE(declines(Layer{1, L + 1, L, 8, 8}, "", {}));  // input channels not whole vectors
  EXPECT_TRUE(declines(Layer{1, L, L + 2, 8, 8}, "", {}));  // output channels not whole vectors
  EXPECT_TRUE(declines(ok, "", {}, Epilogue{.activation = "gelu_erf"}));
}

// Left to itself, the backend takes only layers of enough tiles (32), with 4x4 tiles where there
// are enough of those and few input channels: a 7x7 image (16 2x2 tiles) stays direct.
TEST(ConvWinograd, TileSizeFollowsTheTileCount) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  const Tensor w = random({L, L, 3, 3}, 0.1f, 1), b = random({L}, 0.1f, 2);
  auto chosen = [&](const Layer& l) {
    auto k = winograd(l, Epilogue{}, w, b, 0);
    return !k ? std::string("direct") : k->name().find("winograd_f4x3") != std::string::npos ? "f4" : "f2";
  };
  if (!winograd(Layer{1, L, L, 56, 56}, Epilogue{}, w, b, 0)) GTEST_SKIP() << "oneDNN has its own Winograd here";
  EXPECT_EQ(chosen(Layer{1, L, L, 7, 7}), "direct");
  EXPECT_EQ(chosen(Layer{1, L, L, 14, 14}), "f2");   // 49 2x2 tiles, 16 4x4 ones
  EXPECT_EQ(chosen(Layer{2, L, L, 14, 14}), "f4");   // 32 4x4 tiles
  EXPECT_EQ(chosen(Layer{1, L, L, 56, 56}), "f4");
  const Tensor wide = random({32 * L, 32 * L, 3, 3}, 0.01f, 3), wide_b = random({32 * L}, 0.1f, 4);
  EXPECT_TRUE(winograd(Layer{2, 32 * L, 32 * L, 14, 14}, Epilogue{}, wide, wide_b, 0)->name().find("winograd_f2x3") !=
              std::string::npos)
      << "many input channels keep 2x2 tiles";
  EXPECT_TRUE(winograd(Layer{1, L, L, 7, 7}, Epilogue{}, w, b, 2) != nullptr);
}

// Plans at two batch sizes hold one copy of the transformed weights.
TEST(ConvWinograd, PlansShareTheTransformedWeights) {
  const int64_t L = static_cast<int64_t>(cpu::simd::lanes());
  const Tensor w = random({L, L, 3, 3}, 0.1f, 1), b = random({L}, 0.1f, 2);
  const auto before = cpu::derived_weight_cache_stats();
  auto one = winograd(Layer{1, L, L, 8, 8}, Epilogue{}, w, b, 2), two = winograd(Layer{2, L, L, 8, 8}, Epilogue{}, w, b, 2);
  const Tensor other = random({L, L, 3, 3}, 0.1f, 3);
  auto three = winograd(Layer{1, L, L, 8, 8}, Epilogue{}, other, b, 2);
  const auto after = cpu::derived_weight_cache_stats();
  EXPECT_EQ(after.entries, before.entries + 2);
  EXPECT_EQ(after.hits, before.hits + 1);
}

// A ResNet basic block: y = relu(conv(relu(conv(x))) + x). Both convolutions run as Winograd
// (fusor's, or oneDNN's where it has one; 16x11 outputs are 48 tiles), and the value between
// them stays blocked.
TEST(ConvWinograd, ResNetBlockRunsBlockedBetweenItsConvolutions) {
  test::GraphBuilder b;
  const int64_t c = 4 * static_cast<int64_t>(cpu::simd::lanes());
  const std::map<std::string, Attribute> pads = {{"pads", V{1, 1, 1, 1}}, {"kernel_shape", V{3, 3}}};
  auto conv = [&](int in, const std::string& name, uint32_t seed) {
    return b.node(Op::Conv, {in, b.constant("W" + name, random({c, c, 3, 3}, 1.f / std::sqrt(9.f * c), seed)),
                             b.constant("B" + name, random({c}, 0.5f, seed + 1))},
                  name, DType::Float32, pads);
  };
  int x = b.input("x");
  int h = b.node(Op::Relu, {conv(x, "c1", 1)}, "h");
  int y = b.node(Op::Relu, {b.node(Op::Add, {conv(h, "c2", 3), x}, "sum")}, "y");
  auto graph = b.finish({y});
  for (int64_t batch : {1, 2}) {
    auto r = test::expect_fused_matches_reference(graph, {{"x", random({batch, c, 16, 11}, 1.f, 5)}});
    ASSERT_EQ(r.fused.steps.size(), 2u) << r.kernels();
    for (const auto& step : r.fused.steps) EXPECT_NE(step.kernel->name().find("winograd"), std::string::npos) << r.kernels();
    EXPECT_TRUE(r.fused.blocked_by[static_cast<size_t>(h)]) << r.kernels();
  }
}

}  // namespace
}  // namespace fusor
