// The rotate-half rotary embedding as transformers exports it, built by hand for the fusion
// tests: inputs x [..., D], cos and sin (the tables, broadcast to x), then
//   Slice(x, 0, h), Slice(x, h, INT64_MAX), Neg, Concat(-x2, x1), Mul(x, cos), Mul(., sin), Add
// on the last axis, h = D / 2. A spec field breaks one part of the form, for near misses.
#pragma once
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "graph_builder.h"

namespace fusor::test {

struct RotarySpec {
  int64_t dim = 8;      // x's last dim
  Dims table = {5, 8};  // the dims of cos and sin
  int64_t split = -1;   // where the halves part; -1: dim / 2
  bool halves_swapped = false;    // Concat(x1, -x2)
  bool lower_negated = false;     // Concat(x2, -x1)
  bool operands_swapped = false;  // Mul(cos, x), Mul(sin, rotated), Add(by_sin, by_cos): still the form
  bool opset9 = false;            // Slices with attributes (opset < 10), the upper one from -h
  bool other_upper = false;       // the upper half sliced from another tensor: a near miss
};

inline std::shared_ptr<const Graph> rotary_graph(const RotarySpec& s = {}) {
  GraphBuilder b(s.opset9 ? 9 : 17);
  const int x = b.input("x"), cos = b.input("cos"), sin = b.input("sin");
  const int upper_of = s.other_upper ? b.input("other") : x;
  auto one = [&](const std::string& name, int64_t v) {
    Tensor t(DType::Int64, {1});
    t.data<int64_t>()[0] = v;
    return b.constant(name, t);
  };
  const int64_t h = s.split < 0 ? s.dim / 2 : s.split;
  const int64_t end = std::numeric_limits<int64_t>::max();
  int x1, x2;
  if (s.opset9) {
    using V = std::vector<int64_t>;
    x1 = b.node(Op::Slice, {x}, "x1", DType::Float32, {{"starts", V{0}}, {"ends", V{h}}, {"axes", V{-1}}});
    x2 = b.node(Op::Slice, {upper_of}, "x2", DType::Float32, {{"starts", V{-(s.dim - h)}}, {"ends", V{end}}, {"axes", V{-1}}});
  } else {
    const int axes = one("axes", -1), steps = one("steps", 1);
    x1 = b.node(Op::Slice, {x, one("lo_start", 0), one("lo_end", h), axes, steps}, "x1");
    x2 = b.node(Op::Slice, {upper_of, one("hi_start", h), one("hi_end", end), axes, steps}, "x2");
  }
  const int negated = b.node(Op::Neg, {s.lower_negated ? x1 : x2}, "negated");
  std::vector<int> parts = {negated, s.lower_negated ? x2 : x1};
  if (s.halves_swapped) std::swap(parts[0], parts[1]);
  const int rotated = b.node(Op::Concat, parts, "rotated", DType::Float32, {{"axis", int64_t{-1}}});
  const int by_cos = s.operands_swapped ? b.node(Op::Mul, {cos, x}, "by_cos") : b.node(Op::Mul, {x, cos}, "by_cos");
  const int by_sin = s.operands_swapped ? b.node(Op::Mul, {sin, rotated}, "by_sin") : b.node(Op::Mul, {rotated, sin}, "by_sin");
  return b.finish({s.operands_swapped ? b.node(Op::Add, {by_sin, by_cos}, "y") : b.node(Op::Add, {by_cos, by_sin}, "y")});
}

}  // namespace fusor::test
