#include "ir/box_suppression.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "ir/shape_util.h"

namespace fusor {
namespace {

struct Extent {
  float x_min, x_max, y_min, y_max;
  float area() const { return (x_max - x_min) * (y_max - y_min); }
};

// Corners may come in either order ("flipped" boxes).
Extent extent_of(const float* b, bool center_point_box) {
  if (center_point_box)
    return {b[0] - b[2] / 2, b[0] + b[2] / 2, b[1] - b[3] / 2, b[1] + b[3] / 2};
  return {std::min(b[1], b[3]), std::max(b[1], b[3]), std::min(b[0], b[2]), std::max(b[0], b[2])};
}

bool overlaps_too_much(const Extent& a, const Extent& b, float iou_threshold) {
  const float x_min = std::max(a.x_min, b.x_min), x_max = std::min(a.x_max, b.x_max);
  const float y_min = std::max(a.y_min, b.y_min), y_max = std::min(a.y_max, b.y_max);
  if (x_max <= x_min || y_max <= y_min) return false;
  const float inter = (x_max - x_min) * (y_max - y_min);
  const float area_a = a.area(), area_b = b.area();
  const float uni = area_a + area_b - inter;
  if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > iou_threshold;
}

}  // namespace

SuppressionParams suppression_params(const Node& node, std::span<const Tensor* const> optional_inputs) {
  auto given = [&](size_t i) -> const Tensor* {
    const Tensor* t = i < optional_inputs.size() ? optional_inputs[i] : nullptr;
    return t && t->defined() && t->numel() > 0 ? t : nullptr;
  };
  auto scalar = [&](const Tensor& t, DType want, const char* what) {
    if (t.dtype() != want || t.numel() != 1)
      fail(node, std::string(what) + " must hold one " + dtype_name(want) + " value");
  };
  SuppressionParams p;
  int64_t center = node.attr_int("center_point_box", 0);
  if (center != 0 && center != 1) fail(node, "center_point_box must be 0 or 1, got " + std::to_string(center));
  p.center_point_box = center == 1;
  if (const Tensor* t = given(0)) {
    scalar(*t, DType::Int64, "max_output_boxes_per_class");
    p.max_per_class = std::max<int64_t>(t->data<int64_t>()[0], 0);
  }
  if (const Tensor* t = given(1)) {
    scalar(*t, DType::Float32, "iou_threshold");
    p.iou_threshold = t->data<float>()[0];
  }
  if (const Tensor* t = given(2)) {
    scalar(*t, DType::Float32, "score_threshold");
    p.score_threshold = t->data<float>()[0];
  }
  return p;
}

void check_suppression_shapes(const Node& node, const TensorType& boxes, const TensorType& scores) {
  if (boxes.dtype != DType::Float32 || scores.dtype != DType::Float32)
    fail(node, "boxes and scores must be float32", ErrorKind::UnsupportedOp);
  if (boxes.dims.size() != 3 || boxes.dims[2] != 4)
    fail(node, "boxes must be [batches, boxes, 4], got " + dims_to_string(boxes.dims));
  if (scores.dims.size() != 3 || scores.dims[0] != boxes.dims[0] || scores.dims[2] != boxes.dims[1])
    fail(node, "scores must be [batches, classes, boxes] = [" + std::to_string(boxes.dims[0]) + ", C, " +
                   std::to_string(boxes.dims[1]) + "] for boxes " + dims_to_string(boxes.dims) + ", got " +
                   dims_to_string(scores.dims));
}

std::vector<std::array<int64_t, 3>> suppress_boxes(const Tensor& boxes, const Tensor& scores,
                                                   const SuppressionParams& params) {
  const int64_t batches = boxes.dims()[0], n = boxes.dims()[1], classes = scores.dims()[1];
  const float* box = boxes.data<float>();
  const float* score = scores.data<float>();
  std::vector<std::array<int64_t, 3>> out;
  std::vector<Extent> extents(static_cast<size_t>(n));
  std::vector<int64_t> candidates, kept;
  for (int64_t b = 0; b < batches; ++b) {
    for (int64_t i = 0; i < n; ++i) extents[static_cast<size_t>(i)] = extent_of(box + (b * n + i) * 4, params.center_point_box);
    for (int64_t c = 0; c < classes; ++c) {
      const float* s = score + (b * classes + c) * n;
      candidates.clear();
      for (int64_t i = 0; i < n; ++i)
        if (!params.score_threshold || s[i] > *params.score_threshold) candidates.push_back(i);
      // NaN scores rank last so the order stays strict.
      auto key = [&](int64_t i) { return std::isnan(s[i]) ? -std::numeric_limits<float>::infinity() : s[i]; };
      std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t x, int64_t y) { return key(x) > key(y); });
      kept.clear();
      for (int64_t i : candidates) {
        if (static_cast<int64_t>(kept.size()) >= params.max_per_class) break;
        const Extent& e = extents[static_cast<size_t>(i)];
        if (std::none_of(kept.begin(), kept.end(), [&](int64_t k) {
              return overlaps_too_much(extents[static_cast<size_t>(k)], e, params.iou_threshold);
            })) {
          kept.push_back(i);
          out.push_back({b, c, i});
        }
      }
    }
  }
  return out;
}

}  // namespace fusor
