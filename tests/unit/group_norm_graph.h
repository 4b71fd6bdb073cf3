// GroupNorm as PyTorch exports it (nn.GroupNorm, then SiLU), built by hand for the fusion tests:
// Reshape x [N, C, H, W] to [N, groups, -1], InstanceNormalization, Reshape back to Shape(x),
// Mul by gamma [C, 1, 1], Add beta [C, 1, 1], optionally Sigmoid and Mul. A spec field breaks
// one part of the pattern, for near misses.
#pragma once
#include <cmath>
#include <memory>

#include "graph_builder.h"
#include "passes/fused_kinds.h"

namespace fusor::test {

struct GroupNormSpec {
  int64_t channels = 8, groups = 4;
  size_t spatial_rank = 2;  // x is [N, C] and this many more axes
  bool silu = true;
  bool gamma_scalar = false;  // gamma is one value, not one per channel: a near miss
};

inline Tensor group_norm_values(Dims dims, float scale, float offset) {
  Tensor t(DType::Float32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::cos(0.61f * static_cast<float>(i)) * scale + offset;
  return t;
}

// The fused GroupNorm node fuse_group_norm makes (inputs x, gamma, beta per group, scale and shift
// per channel), for tests of its kernel alone.
inline Node fused_group_norm_node(int64_t groups, bool silu) {
  Node node;
  node.name = "gn";
  node.op = Op::Fused;
  node.op_type = fused_kind_name(FusedKind::GroupNorm);
  node.domain = "fusor";
  node.attrs = {{"groups", groups}, {"epsilon", 1e-5f}};
  if (silu) node.attrs["activation"] = std::string("silu");
  node.inputs = {0, 1, 2, 3, 4};
  node.outputs = {5};
  return node;
}

inline std::shared_ptr<const Graph> group_norm_graph(const GroupNormSpec& s = {}) {
  Dims per_channel(s.spatial_rank + 1, 1);
  per_channel[0] = s.channels;
  GraphBuilder b;
  const int x = b.input("x");
  Tensor shape(DType::Int64, {3});
  shape.data<int64_t>()[0] = 0;
  shape.data<int64_t>()[1] = s.groups;
  shape.data<int64_t>()[2] = -1;
  const int grouped = b.node(Op::Reshape, {x, b.constant("group_shape", shape)}, "grouped");
  const int normed = b.node(Op::InstanceNormalization,
                            {grouped, b.constant("in_scale", group_norm_values({s.groups}, 0.3f, 1.0f)),
                             b.constant("in_bias", group_norm_values({s.groups}, 0.2f, 0.1f))},
                            "normed", DType::Float32, {{"epsilon", 1e-5f}});
  const int back = b.node(Op::Reshape, {normed, b.node(Op::Shape, {x}, "x_shape", DType::Int64)}, "back");
  int y = b.node(Op::Mul, {back, b.constant("gamma", (s.gamma_scalar ? group_norm_values({1}, 0.5f, 1.0f) : group_norm_values(per_channel, 0.5f, 1.0f)))}, "scaled");
  y = b.node(Op::Add, {y, b.constant("beta", group_norm_values(per_channel, 0.4f, 0.0f))}, "shifted");
  if (s.silu) y = b.node(Op::Mul, {y, b.node(Op::Sigmoid, {y}, "gate")}, "y");
  return b.finish({y});
}

}  // namespace fusor::test
