// The one strided broadcast loop of the reference kernels, shared by the binary ops, Where and
// Expand. Operands are right-aligned against the output (numpy rules); a broadcast dimension
// has stride 0.
//
// Why rows: the loop visits the output as runs of contiguous elements and hands each run to the
// caller, which does a plain inner loop. Dimensions that are contiguous for every operand are
// merged first, so equal shapes become one run over the whole tensor and a scalar operand is a
// run with step 0; otherwise the outer dimensions advance with an odometer (no div/mod per
// element).
#pragma once
#include <array>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "ir/shape_util.h"

namespace fusor::ref {

// Calls row(out_offset, in_offsets, count, in_steps) for each run: element j of the run is
// output element out_offset + j and, for operand k, element in_offsets[k] + j * in_steps[k].
template <size_t N, class Row>
void for_each_broadcast_row(const Dims& out, const std::array<const Dims*, N>& ins, Row&& row) {
  using Offsets = std::array<int64_t, N>;
  const int64_t total = numel_of(out);
  if (total == 0) return;

  // Fast path: every operand has the output's shape or is a single element.
  bool simple = true;
  Offsets steps{};
  for (size_t k = 0; k < N; ++k) {
    if (*ins[k] == out) steps[k] = 1;
    else if (numel_of(*ins[k]) == 1) steps[k] = 0;
    else simple = false;
  }
  if (simple) {
    row(int64_t{0}, Offsets{}, total, steps);
    return;
  }

  // Per-dimension strides of every operand, with mergeable dimensions collapsed.
  std::array<std::vector<int64_t>, N> in_strides;
  for (size_t k = 0; k < N; ++k) in_strides[k] = broadcast_strides(*ins[k], out);
  std::vector<int64_t> dims;
  std::vector<Offsets> strides;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    Offsets st;
    for (size_t k = 0; k < N; ++k) st[k] = in_strides[k][d];
    bool merge = !dims.empty();
    for (size_t k = 0; k < N && merge; ++k) merge = strides.back()[k] == st[k] * out[d];
    if (merge) {
      dims.back() *= out[d];
      strides.back() = st;
    } else {
      dims.push_back(out[d]);
      strides.push_back(st);
    }
  }

  const size_t r = dims.size();
  const int64_t inner = dims[r - 1];
  const Offsets inner_steps = strides[r - 1];
  std::vector<int64_t> counter(r - 1, 0);
  Offsets off{};
  for (int64_t o = 0; o < total; o += inner) {
    row(o, off, inner, inner_steps);
    for (size_t d = r - 1; d-- > 0;) {
      if (++counter[d] < dims[d]) {
        for (size_t k = 0; k < N; ++k) off[k] += strides[d][k];
        break;
      }
      counter[d] = 0;
      for (size_t k = 0; k < N; ++k) off[k] -= strides[d][k] * (dims[d] - 1);
    }
  }
}

namespace detail {
template <class O, class... I, class F, size_t... K>
void broadcast_map_impl(const Tensor& out, const std::array<const Tensor*, sizeof...(I)>& ins,
                        F& f, std::index_sequence<K...>) {
  O* o = out.data<O>();
  std::tuple<const I*...> p{ins[K]->template data<I>()...};
  for_each_broadcast_row<sizeof...(I)>(
      out.dims(), {&ins[K]->dims()...},
      [&](int64_t oo, const auto& off, int64_t count, const auto& step) {
        for (int64_t j = 0; j < count; ++j)
          o[oo + j] = static_cast<O>(f(std::get<K>(p)[off[K] + j * step[K]]...));
      });
}
}  // namespace detail

// out[i] = f(ins[0][...], ins[1][...], ...) with broadcasting; O and I... are element types:
// broadcast_map<bool, float, float>(out, {&a, &b}, [](float x, float y) { return x < y; }).
template <class O, class... I, class F>
void broadcast_map(const Tensor& out, const std::array<const Tensor*, sizeof...(I)>& ins, F&& f) {
  detail::broadcast_map_impl<O, I...>(out, ins, f, std::index_sequence_for<I...>{});
}

}  // namespace fusor::ref
