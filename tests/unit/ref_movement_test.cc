// Movement ops (ir/op_rows_movement.h): shape function + reference kernel on small
// hand-checked cases the node tests miss, and the one-line errors for bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "ref_test_util.h"

namespace fusor {
namespace {

using namespace test;

Tensor scalar(float v) { return make<float>({}, {v}); }

TEST(RefMovement, PadModesOnOneAxis) {
  Tensor x = floats({1, 2, 3});
  auto pad = [&](const char* mode, std::vector<int64_t> pads, std::vector<Tensor> extra = {}) {
    std::vector<Tensor> in{x, ints(pads)};
    in.insert(in.end(), extra.begin(), extra.end());
    return values<float>(run(make_node("Pad", 19, {{"mode", std::string(mode)}}), in)[0]);
  };
  EXPECT_EQ(pad("reflect", {2, 2}), (std::vector<float>{3, 2, 1, 2, 3, 2, 1}));
  EXPECT_EQ(pad("edge", {2, 2}), (std::vector<float>{1, 1, 1, 2, 3, 3, 3}));
  EXPECT_EQ(pad("wrap", {2, 2}), (std::vector<float>{2, 3, 1, 2, 3, 1, 2}));
  // A negative pad crops; the constant fills the rest.
  EXPECT_EQ(pad("constant", {-1, 1}, {scalar(9)}), (std::vector<float>{2, 3, 9}));
  // ... and the other modes read the cropped input, as ONNX Runtime does: wrap read the cropped 1.
  EXPECT_EQ(pad("wrap", {-1, 2}), (std::vector<float>{2, 3, 2, 3}));
  EXPECT_EQ(pad("wrap", {2, -1}), (std::vector<float>{1, 2, 1, 2}));
  // Reflecting a single element repeats it.
  EXPECT_EQ(values<float>(run(make_node("Pad", 19, {{"mode", std::string("reflect")}}), {floats({7}), ints({2, 1})})[0]),
            (std::vector<float>{7, 7, 7, 7}));
}

TEST(RefMovement, PadAxesInputAndOldAttributes) {
  Tensor x = make<int32_t>({2, 2}, {1, 2, 3, 4});
  auto out = run(make_node("Pad", 18), {x, ints({1, 0}), Tensor(), ints({-1})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 3}));
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{0, 1, 2, 0, 3, 4}));
  // Opset 2: pads and value are attributes.
  out = run(make_node("Pad", 2, {{"pads", std::vector<int64_t>{0, 1, 0, 0}}, {"value", 5.0f}}), {x});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{5, 1, 2, 5, 3, 4}));
}

TEST(RefMovement, PadRejectsBadModeAndPads) {
  Tensor x = floats({1, 2});
  EXPECT_TRUE(contains(error_of(make_node("Pad", 13, {{"mode", std::string("mirror")}}), {x, ints({1, 1})}), "mirror"));
  // wrap arrived in opset 19.
  EXPECT_TRUE(contains(error_of(make_node("Pad", 18, {{"mode", std::string("wrap")}}), {x, ints({1, 1})}), "wrap"));
  EXPECT_TRUE(contains(error_of(make_node("Pad", 13), {x, ints({1, 1, 1})}), "pads"));
  error_of(make_node("Pad", 13), {x, ints({-2, -1})});  // a negative size
  error_of(make_node("Pad", 13, {{"mode", std::string("edge")}}), {make<float>({0}, {}), ints({1, 0})});
}

TEST(RefMovement, TileRepeatsEachAxis) {
  Tensor x = make<int8_t>({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(values<int8_t>(run(make_node("Tile", 13), {x, ints({1, 2})})[0]),
            (std::vector<int8_t>{1, 2, 1, 2, 3, 4, 3, 4}));
  auto out = run(make_node("Tile", 13), {x, ints({2, 0})});
  EXPECT_EQ(out[0].dims(), (Dims{4, 0}));
  error_of(make_node("Tile", 13), {x, ints({2})});
  error_of(make_node("Tile", 13), {x, ints({-1, 1})});
}

TEST(RefMovement, DepthToSpaceModesAndSpaceToDepthInverse) {
  Tensor x = make<float>({1, 8, 1, 1}, iota_f(8));
  auto dcr = run(make_node("DepthToSpace", 13, {{"blocksize", int64_t{2}}}), {x});
  EXPECT_EQ(dcr[0].dims(), (Dims{1, 2, 2, 2}));
  EXPECT_EQ(values<float>(dcr[0]), (std::vector<float>{0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd = run(make_node("DepthToSpace", 13, {{"blocksize", int64_t{2}}, {"mode", std::string("CRD")}}), {x});
  EXPECT_EQ(values<float>(crd[0]), iota_f(8));
  Tensor img = make<float>({1, 2, 4, 6}, iota_f(48));
  auto packed = run(make_node("SpaceToDepth", 13, {{"blocksize", int64_t{2}}}), {img});
  EXPECT_EQ(packed[0].dims(), (Dims{1, 8, 2, 3}));
  auto back = run(make_node("DepthToSpace", 13, {{"blocksize", int64_t{2}}}), {packed[0]});
  EXPECT_EQ(values<float>(back[0]), iota_f(48));
  error_of(make_node("DepthToSpace", 13, {{"blocksize", int64_t{3}}}), {x});
  error_of(make_node("SpaceToDepth", 13, {{"blocksize", int64_t{0}}}), {img});
}

TEST(RefMovement, GatherElementsWrapsAndRejectsOutOfRange) {
  Tensor data = make<float>({2, 2}, {1, 2, 3, 4});
  auto out = run(make_node("GatherElements", 13, {{"axis", int64_t{1}}}), {data, make<int64_t>({2, 2}, {0, 0, -1, 0})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{1, 1, 4, 3}));
  std::string why = error_of(make_node("GatherElements", 13, {{"axis", int64_t{1}}}),
                             {data, make<int32_t>({2, 2}, {0, 2, 0, 0})});
  EXPECT_TRUE(contains(why, "index 2 is out of range")) << why;
  error_of(make_node("GatherElements", 13), {data, make<int64_t>({1, 3}, {0, 0, 0})});  // indices exceed data
}

TEST(RefMovement, GatherNDBatchDimsAndRange) {
  Tensor data = make<float>({2, 2, 2}, iota_f(8));
  auto out = run(make_node("GatherND", 13, {{"batch_dims", int64_t{1}}}), {data, make<int64_t>({2, 1}, {1, -2})});
  EXPECT_EQ(out[0].dims(), (Dims{2, 2}));
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{2, 3, 4, 5}));
  out = run(make_node("GatherND", 13), {data, make<int64_t>({1, 3}, {1, 0, 1})});
  EXPECT_EQ(values<float>(out[0]), (std::vector<float>{5}));
  EXPECT_TRUE(contains(error_of(make_node("GatherND", 13), {data, make<int64_t>({1, 2}, {0, 2})}), "out of range"));
  error_of(make_node("GatherND", 13), {data, make<int64_t>({1, 4}, {0, 0, 0, 0})});  // tuple longer than rank
}

TEST(RefMovement, ScatterElementsReductions) {
  Tensor data = make<float>({1, 5}, {1, 1, 1, 1, 1});
  Tensor idx = make<int64_t>({1, 3}, {1, 3, -4});
  Tensor upd = make<float>({1, 3}, {2, 3, 4});
  auto with = [&](const char* r) {
    return values<float>(run(make_node("ScatterElements", 18, {{"axis", int64_t{1}}, {"reduction", std::string(r)}}),
                             {data, idx, upd})[0]);
  };
  EXPECT_EQ(with("none"), (std::vector<float>{1, 4, 1, 3, 1}));  // duplicates: the last write wins
  EXPECT_EQ(with("add"), (std::vector<float>{1, 7, 1, 4, 1}));
  EXPECT_EQ(with("mul"), (std::vector<float>{1, 8, 1, 3, 1}));
  EXPECT_EQ(with("max"), (std::vector<float>{1, 4, 1, 3, 1}));
  EXPECT_EQ(with("min"), (std::vector<float>{1, 1, 1, 1, 1}));
  error_of(make_node("ScatterElements", 16, {{"reduction", std::string("max")}}), {data, idx, upd});  // max is 18+
  EXPECT_TRUE(contains(error_of(make_node("Scatter", 10, {{"axis", int64_t{1}}}),
                                {data, make<int64_t>({1, 1}, {5}), make<float>({1, 1}, {0})}),
                       "out of range"));
  error_of(make_node("ScatterElements", 18), {data, idx, make<float>({1, 2}, {0, 0})});  // updates shape
}

TEST(RefMovement, ScatterNDReductionAndRange) {
  Tensor data = make<int32_t>({4}, {1, 2, 3, 4});
  Tensor idx = make<int64_t>({3, 1}, {1, 1, -1});
  Tensor upd = make<int32_t>({3}, {2, 3, 5});
  auto out = run(make_node("ScatterND", 18, {{"reduction", std::string("mul")}}), {data, idx, upd});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{1, 12, 3, 20}));
  EXPECT_TRUE(contains(error_of(make_node("ScatterND", 18), {data, make<int64_t>({1, 1}, {4}), make<int32_t>({1}, {0})}),
                       "out of range"));
  error_of(make_node("ScatterND", 18), {data, idx, make<int32_t>({2}, {0, 0})});  // updates shape
}

TEST(RefMovement, ReverseSequenceTimeMajor) {
  Tensor x = make<float>({4, 2}, iota_f(8));  // [time, batch]
  auto node = make_node("ReverseSequence", 10, {{"time_axis", int64_t{0}}, {"batch_axis", int64_t{1}}});
  EXPECT_EQ(values<float>(run(node, {x, ints({3, 1})})[0]), (std::vector<float>{4, 1, 2, 3, 0, 5, 6, 7}));
  EXPECT_TRUE(contains(error_of(node, {x, ints({5, 1})}), "sequence length 5"));
}

TEST(RefMovement, EyeLikeDtypeAndOffset) {
  Tensor x = make<float>({3, 3}, iota_f(9));
  auto out = run(make_node("EyeLike", 9, {{"dtype", DType::Int32}, {"k", int64_t{-1}}}), {x});
  EXPECT_EQ(out[0].dtype(), DType::Int32);
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{0, 0, 0, 1, 0, 0, 0, 1, 0}));
  error_of(make_node("EyeLike", 9), {floats({1, 2})});
}

TEST(RefMovement, CenterCropPadOddDifferences) {
  EXPECT_EQ(values<float>(run(make_node("CenterCropPad", 18), {floats({0, 1, 2, 3, 4}), ints({2})})[0]),
            (std::vector<float>{1, 2}));
  EXPECT_EQ(values<float>(run(make_node("CenterCropPad", 18), {floats({1, 2}), ints({5})})[0]),
            (std::vector<float>{0, 1, 2, 0, 0}));
  error_of(make_node("CenterCropPad", 18), {floats({1, 2}), ints({1, 1})});
}

TEST(RefMovement, ResizeNearestAnyDtype) {
  Tensor x = make<int8_t>({2, 2}, {1, 2, 3, 4});
  auto out = run(make_node("Resize", 13), {x, Tensor(), floats({2, 2})});
  EXPECT_EQ(out[0].dims(), (Dims{4, 4}));
  EXPECT_EQ(values<int8_t>(out[0]), (std::vector<int8_t>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  // Upsample-7 keeps its scales in an attribute.
  out = run(make_node("Upsample", 7, {{"scales", std::vector<float>{1, 2}}}), {make<int32_t>({1, 2}, {5, 6})});
  EXPECT_EQ(values<int32_t>(out[0]), (std::vector<int32_t>{5, 5, 6, 6}));
}

TEST(RefMovement, ResizeLinearCoordinateModes) {
  Tensor x = floats({1, 2});
  auto linear = [&](const char* coord, std::vector<Tensor> args) {
    std::vector<Tensor> in{x};
    in.insert(in.end(), args.begin(), args.end());
    auto node = make_node("Resize", 13, {{"mode", std::string("linear")}, {"coordinate_transformation_mode", std::string(coord)}});
    return values<float>(run(node, in)[0]);
  };
  EXPECT_EQ(linear("half_pixel", {Tensor(), floats({2})}), (std::vector<float>{1, 1.25f, 1.75f, 2}));
  EXPECT_EQ(linear("align_corners", {Tensor(), Tensor(), ints({3})}), (std::vector<float>{1, 1.5f, 2}));
  EXPECT_EQ(linear("asymmetric", {Tensor(), floats({2})}), (std::vector<float>{1, 1.5f, 2, 2}));
  // tf_crop_and_resize: positions outside the region of interest get extrapolation_value.
  auto crop = make_node("Resize", 13, {{"mode", std::string("linear")},
                                        {"coordinate_transformation_mode", std::string("tf_crop_and_resize")},
                                        {"extrapolation_value", 9.0f}});
  EXPECT_EQ(values<float>(run(crop, {floats({1, 2, 3, 4}), floats({0.5f, 1.5f}), Tensor(), ints({3})})[0]),
            (std::vector<float>{2.5f, 4, 9}));
  // A NaN region of interest puts every position outside.
  EXPECT_EQ(values<float>(run(crop, {floats({1, 2, 3, 4}), floats({NAN, 1.5f}), Tensor(), ints({3})})[0]),
            (std::vector<float>{9, 9, 9}));
}

// Float32 image resizes take the per-plane path; float64 the axis-by-axis one: same numbers.
TEST(RefMovement, ResizePlanePathMatchesAxisByAxis) {
  const Dims dims{2, 3, 5, 7};
  std::vector<float> v32(static_cast<size_t>(numel_of(dims)));
  std::vector<double> v64(v32.size());
  for (size_t i = 0; i < v32.size(); ++i) v64[i] = v32[i] = static_cast<float>((i * 37) % 23) - 11.0f;
  for (const char* mode : {"linear", "cubic"})
    for (int64_t antialias : {0, 1}) {
      auto node = make_node("Resize", 18, {{"mode", std::string(mode)}, {"antialias", antialias}});
      auto a = run(node, {make<float>(dims, v32), Tensor(), floats({1, 1, 0.6f, 1.7f})})[0];
      auto b = run(node, {make<double>(dims, v64), Tensor(), floats({1, 1, 0.6f, 1.7f})})[0];
      ASSERT_EQ(a.dims(), (Dims{2, 3, 3, 11}));
      ASSERT_EQ(a.dims(), b.dims());
      for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<double>()[i], 1e-4) << mode << i;
    }
}

TEST(RefMovement, ResizeRejectsBadArguments) {
  Tensor x = floats({1, 2});
  EXPECT_TRUE(contains(error_of(make_node("Resize", 13), {x, Tensor(), floats({2}), ints({4})}), "not both"));
  error_of(make_node("Resize", 13), {x, Tensor(), floats({-2})});
  error_of(make_node("Resize", 13), {x, Tensor(), floats({2, 2})});
  error_of(make_node("Resize", 13, {{"mode", std::string("area")}}), {x, Tensor(), floats({2})});
  error_of(make_node("Resize", 13, {{"coordinate_transformation_mode", std::string("tf_crop_and_resize")}}),
           {x, Tensor(), Tensor(), ints({4})});  // no roi
}

}  // namespace
}  // namespace fusor
