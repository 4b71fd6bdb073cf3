// Greedy non-maximum suppression as ONNX's NonMaxSuppression defines it. Per batch and class:
// boxes whose score passes the threshold, best score first (ties: lower box index first), each
// kept unless its IoU with an already kept box of that class exceeds the IoU threshold, until
// max_per_class are kept. The shape function runs it for the output's length, the reference
// kernel again for the indices.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace fusor {

struct SuppressionParams {
  int64_t max_per_class = 0;            // absent: 0, nothing is selected
  float iou_threshold = 0;              // a box goes when IoU > this
  std::optional<float> score_threshold; // a box is a candidate when score > this
  bool center_point_box = false;        // boxes are [x_center, y_center, w, h], else [y1, x1, y2, x2]
};

// Reads the node's attribute and optional inputs 2..4 (nullptr or empty: absent).
SuppressionParams suppression_params(const Node& node, std::span<const Tensor* const> optional_inputs);

// Checks boxes [batches, boxes, 4] against scores [batches, classes, boxes], naming the node.
void check_suppression_shapes(const Node& node, const TensorType& boxes, const TensorType& scores);

// Selected (batch, class, box) triples, by batch, then class, then selection order.
std::vector<std::array<int64_t, 3>> suppress_boxes(const Tensor& boxes, const Tensor& scores,
                                                   const SuppressionParams& params);

}  // namespace fusor
