// Hand-checked cases for the sequence family's reference kernels and shape functions: Einsum,
// Det, RNN/GRU/LSTM, DFT/STFT, windows, GridSample, AffineGrid, RoiAlign; and their errors.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "onnx/importer.h"
#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

Node einsum(const char* eq, size_t) { return node_of(Op::Einsum, 12, {{"equation", std::string(eq)}}); }

TEST(RefSequence, EinsumMatmulTraceDiagonalOuter) {
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6}), b = make({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_values(run(einsum("ij,jk->ik", 2), {a, b})[0], {2, 2}, {58, 64, 139, 154});
  Tensor sq = make({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expect_values(run(einsum("ii", 1), {sq})[0], {}, {15});           // implicit: a repeated label is summed
  expect_values(run(einsum("ii->i", 1), {sq})[0], {3}, {1, 5, 9});   // explicit diagonal
  expect_values(run(einsum("ji", 1), {a})[0], {3, 2}, {1, 4, 2, 5, 3, 6});  // implicit output is sorted: ij
  expect_values(run(einsum("i,j->ij", 2), {make({2}, {1, 2}), make({3}, {1, 10, 100})})[0], {2, 3},
                {1, 10, 100, 2, 20, 200});
}

TEST(RefSequence, EinsumEllipsisBroadcastsAndSums) {
  // [2,1,2] x [3,2] batch-broadcast matvec: the ellipsis of the second is empty.
  Tensor a = make({2, 1, 2}, {1, 2, 3, 4}), v = make({3, 2}, {1, 0, 0, 1, 1, 1});
  expect_values(run(einsum("...j,kj->...k", 2), {a, v})[0], {2, 1, 3}, {1, 2, 3, 3, 4, 7});
  // Ellipsis dims absent from an explicit output are summed; a [1] dim broadcasts against [2].
  expect_values(run(einsum("...i->i", 1), {a})[0], {2}, {4, 6});
  expect_values(run(einsum("...i,...i->...", 2), {make({2, 2}, {1, 2, 3, 4}), make({1, 2}, {1, 1})})[0], {2}, {3, 7});
  auto y = run(einsum("ij,j", 2), {make_i64({2, 2}, {1, 2, 3, 4}), make_i64({2}, {10, 1})})[0];
  EXPECT_EQ(test::values<int64_t>(y), (std::vector<int64_t>{12, 34}));
  // Integer overflow wraps (as numpy does) rather than being undefined behaviour.
  auto w = run(einsum("i,i", 2), {make_i64({1}, {INT64_MAX}), make_i64({1}, {2})})[0];
  EXPECT_EQ(w.data<int64_t>()[0], -2);
}

TEST(RefSequence, EinsumBadEquations) {
  Tensor a = make({2, 3}, {1, 2, 3, 4, 5, 6});
  expect_error(einsum("ij,jk->ik", 2), {a}, "operand terms");
  expect_error(einsum("ij->k", 1), {a}, "'k' is in no input");
  expect_error(einsum("ijk", 1), {a}, "does not fit input 0");
  expect_error(einsum("i$", 1), {a}, "unexpected '$'");
  expect_error(einsum("ii", 1), {a}, "label 'i' has size 2 and 3");
  expect_error(einsum("ij->ii", 1), {a}, "'i' is repeated");
}

TEST(RefSequence, DetPivotsAndBatches) {
  expect_values(run(node_of(Op::Det, 22), {make({2, 2}, {0, 1, 1, 0})})[0], {}, {-1});
  expect_values(run(node_of(Op::Det, 22), {make({3, 3, 3}, {2, 0, 0, 0, 3, 0, 0, 0, 4,   // diagonal
                                                             1, 2, 3, 2, 4, 6, 0, 1, 1,   // singular
                                                             0, 2, 1, 1, 0, 0, 0, 1, 3})})[0],
                {3}, {24, 0, -5});
  expect_error(node_of(Op::Det, 22), {make({2, 3}, {1, 2, 3, 4, 5, 6})}, "square");
}

// RNN with one hidden unit and W = R = 1: h_t = tanh(x_t + h_{t-1}).
Tensor ones(Dims dims) { return make(dims, std::vector<float>(static_cast<size_t>(numel_of(dims)), 1.0f)); }

TEST(RefSequence, RnnDirectionsByHand) {
  Tensor x = make({2, 1, 1}, {1, 2});
  const float f0 = std::tanh(1.0f), f1 = std::tanh(2.0f + f0);  // forward over t = 0, 1
  const float r1 = std::tanh(2.0f), r0 = std::tanh(1.0f + r1);  // reverse over t = 1, 0
  auto fwd = run(node_of(Op::RNN, 22, {{"hidden_size", int64_t{1}}}, 2), {x, ones({1, 1, 1}), ones({1, 1, 1})});
  expect_values(fwd[0], {2, 1, 1, 1}, {f0, f1});
  expect_values(fwd[1], {1, 1, 1}, {f1});
  auto bi = run(node_of(Op::RNN, 22, {{"hidden_size", int64_t{1}}, {"direction", std::string("bidirectional")}}, 2),
                {x, ones({2, 1, 1}), ones({2, 1, 1})});
  expect_values(bi[0], {2, 2, 1, 1}, {f0, r0, f1, r1});
  expect_values(bi[1], {2, 1, 1}, {f1, r0});
}

TEST(RefSequence, RnnSequenceLensLayoutClipAndActivations) {
  // Batch 2, lengths 1 and 2: the short sequence's later step is zero in Y; Y_h is its last valid state.
  Tensor x = make({2, 2, 1}, {1, 1, 5, 2});
  Tensor bias = make({1, 2}, {0, 0});
  auto y = run(node_of(Op::RNN, 22, {{"hidden_size", int64_t{1}}}, 2),
               {x, ones({1, 1, 1}), ones({1, 1, 1}), bias, make_i32({2}, {1, 2})});
  const float h1 = std::tanh(1.0f);
  expect_values(y[0], {2, 1, 2, 1}, {h1, h1, 0, std::tanh(2.0f + h1)});
  expect_values(y[1], {1, 2, 1}, {h1, std::tanh(2.0f + h1)});
  // layout 1 puts batch first in X, Y and Y_h.
  auto b = run(node_of(Op::RNN, 22, {{"hidden_size", int64_t{1}}, {"layout", int64_t{1}}}, 2),
               {make({2, 2, 1}, {1, 5, 1, 2}), ones({1, 1, 1}), ones({1, 1, 1})});
  expect_values(b[0], {2, 2, 1, 1}, {h1, std::tanh(5.0f + h1), h1, std::tanh(2.0f + h1)});
  // clip bounds the pre-activation; LeakyRelu takes its alpha from activation_alpha.
  auto c = run(node_of(Op::RNN, 22, {{"hidden_size", int64_t{1}}, {"clip", 0.25f}}), {make({1, 1, 1}, {3}), ones({1, 1, 1}), ones({1, 1, 1})});
  expect_values(c[0], {1, 1, 1, 1}, {std::tanh(0.25f)});
  auto l = run(node_of(Op::RNN, 22, {{"hidden_size", int64_t{1}}, {"activations", std::vector<std::string>{"LeakyRelu"}},
                                     {"activation_alpha", std::vector<float>{0.5f}}}),
               {make({1, 1, 1}, {-4}), ones({1, 1, 1}), ones({1, 1, 1})});
  expect_values(l[0], {1, 1, 1, 1}, {-2});
}

TEST(RefSequence, RecurrentBadAttributesAndInputs) {
  Tensor x = make({1, 1, 1}, {1});
  expect_error(node_of(Op::RNN, 22, {{"activations", std::vector<std::string>{"Swish"}}}), {x, ones({1, 1, 1}), ones({1, 1, 1})},
               "unknown activation 'Swish'");
  expect_error(node_of(Op::GRU, 22, {{"activations", std::vector<std::string>{"Sigmoid"}}}), {x, ones({1, 3, 1}), ones({1, 3, 1})},
               "expects 2 activations");
  expect_error(node_of(Op::LSTM, 22, {{"direction", std::string("sideways")}}), {x, ones({1, 4, 1}), ones({1, 4, 1})},
               "unknown direction 'sideways'");
  expect_error(node_of(Op::RNN, 22, {{"hidden_size", int64_t{2}}}), {x, ones({1, 1, 1}), ones({1, 1, 1})}, "W must have shape");
  expect_error(node_of(Op::RNN, 22), {x, ones({1, 1, 1}), ones({1, 1, 1}), make({1, 2}, {0, 0}), make_i32({1}, {2})},
               "sequence_lens value 2");
}

double sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

TEST(RefSequence, GruAndLstmOneUnitByHand) {
  // One hidden unit, every weight 1, input 1, initial state 0.5, with and without linear_before_reset.
  const double x = 1.0, h = 0.5;
  const double z = sigmoid(x + h), r = sigmoid(x + h);
  const double cand_default = std::tanh(x + r * h);  // Rh = 1, no bias
  Tensor h0 = make({1, 1, 1}, {0.5f});
  Tensor no_bias = make({1, 6}, {0, 0, 0, 0, 0, 0});
  auto g = run(node_of(Op::GRU, 22, {}, 2), {make({1, 1, 1}, {1}), ones({1, 3, 1}), ones({1, 3, 1}), no_bias, Tensor(), h0});
  expect_values(g[1], {1, 1, 1}, {static_cast<float>((1 - z) * cand_default + z * h)});
  // linear_before_reset differs once the recurrence bias of the h gate is non-zero: r * (Rh h + Rbh).
  Tensor rbh = make({1, 6}, {0, 0, 0, 0, 0, 1});
  auto gl = run(node_of(Op::GRU, 22, {{"linear_before_reset", int64_t{1}}}, 2),
                {make({1, 1, 1}, {1}), ones({1, 3, 1}), ones({1, 3, 1}), rbh, Tensor(), h0});
  const double lin = std::tanh(x + r * (h + 1.0));
  expect_values(gl[1], {1, 1, 1}, {static_cast<float>((1 - z) * lin + z * h)});
  // LSTM with peepholes 0.5 on i, o, f and initial cell 2.
  const double c0 = 2.0, p = 0.5;
  const double i = sigmoid(x + h + p * c0), f = sigmoid(x + h + p * c0), cc = std::tanh(x + h);
  const double c1 = f * c0 + i * cc, o = sigmoid(x + h + p * c1), h1 = o * std::tanh(c1);
  auto l = run(node_of(Op::LSTM, 22, {}, 3), {make({1, 1, 1}, {1}), ones({1, 4, 1}), ones({1, 4, 1}), make({1, 8}, {0, 0, 0, 0, 0, 0, 0, 0}),
                                              Tensor(), h0, make({1, 1, 1}, {2}), make({1, 3}, {0.5f, 0.5f, 0.5f})});
  expect_values(l[0], {1, 1, 1, 1}, {static_cast<float>(h1)});
  expect_values(l[1], {1, 1, 1}, {static_cast<float>(h1)});
  expect_values(l[2], {1, 1, 1}, {static_cast<float>(c1)});
}

TEST(RefSequence, DftForwardInverseOnesidedAndPadding) {
  Tensor x = make({1, 4, 1}, {1, 2, 3, 4});
  auto y = run(node_of(Op::DFT, 17), {x});
  expect_values(y[0], {1, 4, 2}, {10, 0, -2, 2, -2, 0, -2, -2});
  auto back = run(node_of(Op::DFT, 17, {{"inverse", int64_t{1}}}), {y[0]});
  expect_values(back[0], {1, 4, 2}, {1, 0, 2, 0, 3, 0, 4, 0});
  auto half = run(node_of(Op::DFT, 20, {{"onesided", int64_t{1}}}), {x});  // opset 20: axis defaults to -2
  expect_values(half[0], {1, 3, 2}, {10, 0, -2, 2, -2, 0});
  auto padded = run(node_of(Op::DFT, 20), {x, make_i64({}, {8}), make_i64({}, {1})});
  EXPECT_EQ(padded[0].dims(), (Dims{1, 8, 2}));
  EXPECT_NEAR(padded[0].data<float>()[0], 10, 1e-5);
  EXPECT_NEAR(padded[0].data<float>()[8], -2, 1e-5);  // bin 4 of 8 = bin 2 of 4
  expect_error(node_of(Op::DFT, 20), {x, Tensor(), make_i64({}, {2})}, "axis 2 is out of range");
  expect_error(node_of(Op::DFT, 17), {make({1, 4, 3}, std::vector<float>(12, 0))}, "real) or 2 (complex)");
}

TEST(RefSequence, StftFramesWithWindow) {
  // Length 6, frames of 4 every 2 samples: frames start at 0 and 2; window zeroes the last sample.
  Tensor x = make({1, 6, 1}, {1, 2, 3, 4, 5, 6});
  auto y = run(node_of(Op::STFT, 17), {x, make_i64({}, {2}), make({4}, {1, 1, 1, 0})});
  ASSERT_EQ(y[0].dims(), (Dims{1, 2, 3, 2}));
  EXPECT_NEAR(y[0].data<float>()[0], 6, 1e-5);   // frame 0 bin 0: 1 + 2 + 3
  EXPECT_NEAR(y[0].data<float>()[6], 12, 1e-5);  // frame 1 bin 0: 3 + 4 + 5
  expect_error(node_of(Op::STFT, 17), {x, make_i64({}, {0})}, "frame_step must be positive");
  expect_error(node_of(Op::STFT, 17), {x, make_i64({}, {1}), make({4}, {1, 1, 1, 1}), make_i64({}, {3})}, "differs");
}

TEST(RefSequence, WindowsPeriodicSymmetricAndDtype) {
  expect_values(run(node_of(Op::HannWindow, 17), {make_i64({}, {4})})[0], {4}, {0, 0.5, 1, 0.5});
  expect_values(run(node_of(Op::HannWindow, 17, {{"periodic", int64_t{0}}}), {make_i64({}, {5})})[0], {5}, {0, 0.5, 1, 0.5, 0});
  expect_values(run(node_of(Op::HammingWindow, 17, {{"periodic", int64_t{0}}}), {make_i64({}, {1})})[0], {1}, {1});
  auto b = run(node_of(Op::BlackmanWindow, 17, {{"output_datatype", DType::Float64}}), {make_i32({}, {4})})[0];
  ASSERT_EQ(b.dtype(), DType::Float64);
  EXPECT_NEAR(b.data<double>()[2], 0.42 + 0.5 + 0.08, 1e-12);
  expect_error(node_of(Op::HannWindow, 17), {make_i64({}, {-1})}, "size -1 is out of range");
  expect_error(node_of(Op::HannWindow, 17, {{"periodic", int64_t{2}}}), {make_i64({}, {3})}, "periodic must be 0 or 1");
}

// output_datatype arrives as an ONNX type code; the importer holds it as a DType, as for Cast.
TEST(RefSequence, WindowOutputDatatypeIsImportedAsDType) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(17);
  auto* g = m.mutable_graph();
  auto* size = g->add_initializer();
  size->set_name("size");
  size->set_data_type(onnx::TensorProto::INT64);
  size->add_int64_data(4);
  auto* n = g->add_node();
  n->set_op_type("HannWindow");
  n->set_name("the_window");
  n->add_input("size");
  n->add_output("y");
  auto* a = n->add_attribute();
  a->set_name("output_datatype");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(onnx::TensorProto::DOUBLE);
  g->add_output()->set_name("y");
  std::string bytes;
  m.SerializeToString(&bytes);
  Graph graph = import_onnx_bytes(bytes, "");
  ASSERT_EQ(graph.nodes.size(), 1u);
  EXPECT_EQ(graph.nodes[0].attr_dtype("output_datatype", DType::Undefined), DType::Float64);
}

TEST(RefSequence, MelWeightMatrixTriangles) {
  // Every filter is a triangle of weights in [0, 1] that peaks at exactly 1.
  auto m = run(node_of(Op::MelWeightMatrix, 17),
               {make_i64({}, {4}), make_i64({}, {64}), make_i64({}, {8000}), make({}, {0}), make({}, {4000})})[0];
  ASSERT_EQ(m.dims(), (Dims{33, 4}));
  for (int64_t f = 0; f < 4; ++f) {
    float peak = 0;
    for (int64_t b = 0; b < 33; ++b) peak = std::max(peak, m.data<float>()[b * 4 + f]);
    EXPECT_FLOAT_EQ(peak, 1.0f) << "filter " << f;
  }
  expect_error(node_of(Op::MelWeightMatrix, 17),
               {make_i64({}, {4}), make_i64({}, {64}), make_i64({}, {8000}), make({}, {0}), make({}, {1e9f})},
               "outside the spectrogram bins");
}

TEST(RefSequence, GridSampleIdentityPaddingAndModes) {
  Tensor x = make({1, 1, 2, 2}, {1, 2, 3, 4});
  // With align_corners the corners of [-1, 1] are the corner pixels.
  Tensor corners = make({1, 2, 2, 2}, {-1, -1, 1, -1, -1, 1, 1, 1});
  expect_values(run(node_of(Op::GridSample, 20, {{"align_corners", int64_t{1}}}), {x, corners})[0], {1, 1, 2, 2}, {1, 2, 3, 4});
  // Far outside: zeros padding gives 0, border the nearest edge pixel; the centre averages all four.
  Tensor far = make({1, 1, 2, 2}, {5, 5, 0, 0});
  expect_values(run(node_of(Op::GridSample, 20), {x, far})[0], {1, 1, 1, 2}, {0, 2.5});
  expect_values(run(node_of(Op::GridSample, 16, {{"padding_mode", std::string("border")}}), {x, far})[0], {1, 1, 1, 2}, {4, 2.5});
  // Infinitely far is far too (it gave NaN): 0, and the edge pixel.
  constexpr float inf = std::numeric_limits<float>::infinity();
  Tensor infinite = make({1, 1, 2, 2}, {inf, inf, -inf, 0});
  expect_values(run(node_of(Op::GridSample, 20), {x, infinite})[0], {1, 1, 1, 2}, {0, 0});
  expect_values(run(node_of(Op::GridSample, 16, {{"padding_mode", std::string("border")}}), {x, infinite})[0], {1, 1, 1, 2},
                {4, 2});
  // Cubic on a pixel centre reads just that pixel (its outer taps, clamped by border, weigh 0).
  expect_values(run(node_of(Op::GridSample, 20, {{"mode", std::string("cubic")}, {"padding_mode", std::string("border")},
                                                 {"align_corners", int64_t{1}}}),
                    {x, make({1, 1, 1, 2}, {1, 1})})[0], {1, 1, 1, 1}, {4});
  // Cubic with border padding clamps each tap, not the coordinate: x = 2.75 on [1, 2, 4] reads taps
  // 1..4 as 2, 4, 4, 4, giving 4 - 2 * w0(0.75) = 4.0703125 rather than the edge value 4.
  expect_values(run(node_of(Op::GridSample, 20, {{"mode", std::string("cubic")}, {"padding_mode", std::string("border")}}),
                    {make({1, 1, 1, 3}, {1, 2, 4}), make({1, 1, 1, 2}, {7.0f / 6.0f, 0})})[0], {1, 1, 1, 1}, {4.0703125f}, 1e-4f);
  // Volumetric nearest (opset 20 allows N-D).
  Tensor v = make({1, 1, 2, 1, 2}, {1, 2, 3, 4});
  expect_values(run(node_of(Op::GridSample, 20, {{"mode", std::string("nearest")}, {"align_corners", int64_t{1}}}),
                    {v, make({1, 1, 1, 1, 3}, {1, -1, 1})})[0], {1, 1, 1, 1, 1}, {4});
  expect_error(node_of(Op::GridSample, 16, {{"mode", std::string("linear")}}), {x, far}, "unknown mode 'linear'");
  expect_error(node_of(Op::GridSample, 20, {{"mode", std::string("bicubic")}}), {x, far}, "unknown mode 'bicubic'");
  expect_error(node_of(Op::GridSample, 20, {{"padding_mode", std::string("wrap")}}), {x, far}, "unknown padding_mode 'wrap'");
  expect_error(node_of(Op::GridSample, 16), {v, make({1, 1, 1, 1, 3}, {0, 0, 0})}, "X must be [N, C, H, W]");
  // A NaN coordinate gives NaN rather than undefined behaviour.
  auto nan = run(node_of(Op::GridSample, 20), {x, make({1, 1, 1, 2}, {std::nanf(""), 0})})[0];
  EXPECT_TRUE(std::isnan(nan.data<float>()[0]));
}

TEST(RefSequence, AffineGridIdentity) {
  Tensor identity = make({1, 2, 3}, {1, 0, 0, 0, 1, 0});
  expect_values(run(node_of(Op::AffineGrid, 20, {{"align_corners", int64_t{1}}}), {identity, make_i64({4}, {1, 1, 2, 2})})[0],
                {1, 2, 2, 2}, {-1, -1, 1, -1, -1, 1, 1, 1});
  expect_values(run(node_of(Op::AffineGrid, 20), {identity, make_i64({4}, {1, 1, 1, 2})})[0], {1, 1, 2, 2}, {-0.5, 0, 0.5, 0});
  expect_error(node_of(Op::AffineGrid, 20), {identity, make_i64({5}, {1, 1, 2, 2, 2})}, "theta must be");
}

TEST(RefSequence, RoiAlignConstantImageAndErrors) {
  Tensor x = make({1, 1, 4, 4}, std::vector<float>(16, 3.0f));
  Tensor rois = make({1, 4}, {0, 0, 3, 3});
  auto y = run(node_of(Op::RoiAlign, 16, {{"output_height", int64_t{2}}, {"output_width", int64_t{2}}}),
               {x, rois, make_i64({1}, {0})});
  expect_values(y[0], {1, 1, 2, 2}, {3, 3, 3, 3});
  expect_error(node_of(Op::RoiAlign, 16), {x, rois, make_i64({1}, {1})}, "batch index 1 is out of range");
  expect_error(node_of(Op::RoiAlign, 16, {{"mode", std::string("median")}}), {x, rois, make_i64({1}, {0})}, "unknown mode 'median'");
  expect_error(node_of(Op::RoiAlign, 16, {{"coordinate_transformation_mode", std::string("asymmetric")}}),
               {x, rois, make_i64({1}, {0})}, "unknown coordinate_transformation_mode");
}

}  // namespace
}  // namespace fusor
