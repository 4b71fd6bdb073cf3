#include "ir/shape_util.h"

#include <algorithm>

#include "ir/data_dependent.h"

namespace fusor {

[[noreturn]] void fail(const Node& node, const std::string& what, ErrorKind kind) {
  throw Error(node.describe() + ": " + what, kind);
}

Dims broadcast_dims(const Dims& a, const Dims& b, const Node& node) {
  size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail(node, "cannot broadcast " + dims_to_string(a) + " with " + dims_to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Dims broadcast_all(const std::vector<Dims>& shapes, const Node& node) {
  Dims out;
  for (const auto& s : shapes) out = broadcast_dims(out, s, node);
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    fail(node, "axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

std::vector<int64_t> strides_of(const Dims& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    s[i] = acc;
    acc *= dims[i];
  }
  return s;
}

std::vector<int64_t> broadcast_strides(const Dims& in, const Dims& out) {
  std::vector<int64_t> s(out.size(), 0);
  auto in_strides = strides_of(in);
  size_t off = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) s[off + i] = in[i] == 1 ? 0 : in_strides[i];
  return s;
}

std::vector<TensorType> same_as_input(const InferContext& ctx, size_t i) {
  return {ctx.inputs[i]};
}

std::vector<int64_t> constant_ints(const InferContext& ctx, size_t i, const char* what) {
  const Tensor& t = known_value(ctx, i, what);
  if (t.dtype() != DType::Int64 && t.dtype() != DType::Int32)  // the tensor's own error names no node
    fail(ctx.node, std::string(what) + " (input " + std::to_string(i) + ") must be int64, not " + dtype_name(t.dtype()),
         ErrorKind::InvalidModel);
  return t.to_int64_vector();
}

}  // namespace fusor
