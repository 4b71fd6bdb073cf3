#include "ir/value_selection.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "ir/shape_util.h"

namespace fusor {
namespace {

bool nonzero_at(const Tensor& x, int64_t i) {
  const auto* bytes = static_cast<const unsigned char*>(x.raw());
  switch (x.dtype()) {
    case DType::Float32: return static_cast<const float*>(x.raw())[i] != 0.0f;
    case DType::Float64: return static_cast<const double*>(x.raw())[i] != 0.0;
    case DType::Float16:
    case DType::BFloat16: {  // every bit but the sign: -0 is zero
      uint16_t bits;
      std::memcpy(&bits, bytes + 2 * i, 2);
      return (bits & 0x7fff) != 0;
    }
    case DType::Float8E4M3FN:
    case DType::Float8E5M2: return (bytes[i] & 0x7f) != 0;
    default: {  // integers, bool, the FNUZ floats (0x80 is NaN there): any set bit
      const size_t size = dtype_size(x.dtype());
      for (size_t b = 0; b < size; ++b)
        if (bytes[static_cast<size_t>(i) * size + b] != 0) return true;
      return false;
    }
  }
}

// Calls f with a typed null pointer for the dtypes Unique orders.
template <class F>
void visit_ordered(DType t, const Node& node, F&& f) {
  switch (t) {
    case DType::Float32: return f(static_cast<float*>(nullptr));
    case DType::Float64: return f(static_cast<double*>(nullptr));
    case DType::Int64: return f(static_cast<int64_t*>(nullptr));
    case DType::Int32: return f(static_cast<int32_t*>(nullptr));
    case DType::Int16: return f(static_cast<int16_t*>(nullptr));
    case DType::Int8: return f(static_cast<int8_t*>(nullptr));
    case DType::UInt64: return f(static_cast<uint64_t*>(nullptr));
    case DType::UInt32: return f(static_cast<uint32_t*>(nullptr));
    case DType::UInt16: return f(static_cast<uint16_t*>(nullptr));
    case DType::UInt8: return f(static_cast<uint8_t*>(nullptr));
    case DType::Bool: return f(static_cast<bool*>(nullptr));
    default: fail(node, std::string("unsupported dtype ") + dtype_name(t), ErrorKind::UnsupportedOp);
  }
}

// Strict order with NaN after every number and equal to NaN (numpy's unique).
template <class T>
bool less(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a)) return false;
    if (std::isnan(b)) return true;
  }
  return a < b;
}

// Slice j of [outer, n, inner] is {data[(o * n + j) * inner + i]}, compared in (o, i) order.
template <class T>
UniqueGroups group_slices(const T* data, int64_t outer, int64_t n, int64_t inner, bool sorted) {
  auto compare = [&](int64_t a, int64_t b) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        T x = data[(o * n + a) * inner + i], y = data[(o * n + b) * inner + i];
        if (less(x, y)) return -1;
        if (less(y, x)) return 1;
      }
    return 0;
  };
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  // Stable: within a run of equal slices the first occurrence comes first.
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
  std::vector<int64_t> group_of(static_cast<size_t>(n)), first, counts;
  for (size_t p = 0; p < order.size(); ++p) {
    if (p == 0 || compare(order[p - 1], order[p]) != 0) {
      first.push_back(order[p]);
      counts.push_back(0);
    }
    group_of[static_cast<size_t>(order[p])] = static_cast<int64_t>(first.size()) - 1;
    ++counts.back();
  }
  // Output position of each group: sorted order as is, or by first occurrence.
  std::vector<int64_t> by_position(first.size());
  std::iota(by_position.begin(), by_position.end(), int64_t{0});
  if (!sorted)
    std::sort(by_position.begin(), by_position.end(),
              [&](int64_t a, int64_t b) { return first[static_cast<size_t>(a)] < first[static_cast<size_t>(b)]; });
  std::vector<int64_t> position_of(first.size());
  UniqueGroups out;
  for (size_t p = 0; p < by_position.size(); ++p) {
    auto g = static_cast<size_t>(by_position[p]);
    position_of[g] = static_cast<int64_t>(p);
    out.first.push_back(first[g]);
    out.counts.push_back(counts[g]);
  }
  for (int64_t g : group_of) out.inverse.push_back(position_of[static_cast<size_t>(g)]);
  return out;
}

}  // namespace

std::vector<int64_t> nonzero_positions(const Tensor& x, const Node& node) {
  if (x.dtype() == DType::Undefined) fail(node, "input is undefined");
  std::vector<int64_t> out;
  for (int64_t i = 0; i < x.numel(); ++i)
    if (nonzero_at(x, i)) out.push_back(i);
  return out;
}

UniqueGroups unique_groups(const Tensor& x, std::optional<int64_t> axis, bool sorted, const Node& node) {
  int64_t outer = 1, n = x.numel(), inner = 1;
  if (axis) {
    const Dims& d = x.dims();
    n = d[static_cast<size_t>(*axis)];
    for (int64_t i = 0; i < *axis; ++i) outer *= d[static_cast<size_t>(i)];
    for (size_t i = static_cast<size_t>(*axis) + 1; i < d.size(); ++i) inner *= d[i];
  }
  UniqueGroups out;
  visit_ordered(x.dtype(), node, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    out = group_slices(static_cast<const T*>(x.raw()), outer, n, inner, sorted);
  });
  return out;
}

std::vector<int64_t> compress_positions(const Tensor& condition, int64_t extent, const Node& node) {
  if (condition.dtype() != DType::Bool || condition.rank() != 1)
    fail(node, "condition must be a 1-D bool tensor");
  if (condition.numel() > extent)
    fail(node, "condition has " + std::to_string(condition.numel()) + " entries, more than the " +
                   std::to_string(extent) + " it selects from");
  std::vector<int64_t> out;
  const bool* c = condition.data<bool>();
  for (int64_t i = 0; i < condition.numel(); ++i)
    if (c[i]) out.push_back(i);
  return out;
}

}  // namespace fusor
