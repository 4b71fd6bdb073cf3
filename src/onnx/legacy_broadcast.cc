#include "onnx/legacy_broadcast.h"

#include <cstring>

#include "fusor/error.h"

namespace fusor {
namespace {

bool broadcasts_by_axis(Op op) {
  switch (op) {
    case Op::Add: case Op::Sub: case Op::Mul: case Op::Div: case Op::Pow:
    case Op::And: case Op::Or: case Op::Xor: case Op::Equal: case Op::Greater: case Op::Less:
      return true;
    default:
      return false;
  }
}

}  // namespace

void align_legacy_broadcast(Graph& graph, Node& n, const std::string& where) {
  if (!n.domain.empty() || n.opset >= 7 || !broadcasts_by_axis(n.op) || n.inputs.size() != 2 || n.inputs[0] < 0 ||
      n.inputs[1] < 0 || n.attr_int("broadcast", 0) != 1 || !n.has_attr("axis"))
    return;
  const Value& a = graph.values[static_cast<size_t>(n.inputs[0])];
  const Value& b = graph.values[static_cast<size_t>(n.inputs[1])];
  const auto unsupported = [&](const std::string& why) {
    return Error(where + ": broadcast=1 with axis " + std::to_string(n.attr_int("axis", 0)) + " (opset < 7) " + why,
                 ErrorKind::UnsupportedOp);
  };
  if (!a.shape) throw unsupported("needs the rank of input 0, which the model does not give");
  const int64_t rank_a = static_cast<int64_t>(a.shape->size());
  int64_t axis = n.attr_int("axis", 0);
  if (axis < 0) axis += rank_a;
  const int64_t rank_b = b.constant ? static_cast<int64_t>(b.constant->rank())
                                    : (b.shape ? static_cast<int64_t>(b.shape->size()) : -1);
  if (rank_b >= 0 && (axis < 0 || axis + rank_b > rank_a))
    throw Error(where + ": broadcast axis " + std::to_string(n.attr_int("axis", 0)) + " does not fit input 1 of rank " +
                    std::to_string(rank_b) + " into input 0 of rank " + std::to_string(rank_a),
                ErrorKind::InvalidModel);
  if (rank_b >= 0 && axis + rank_b == rank_a) return;  // the trailing position: numpy's own
  if (!b.constant) throw unsupported("on a computed input 1 is not supported");
  Dims dims = b.constant->dims();
  dims.resize(static_cast<size_t>(rank_a - axis), 1);
  Tensor aligned(b.constant->dtype(), dims);
  if (b.constant->nbytes() > 0) std::memcpy(aligned.raw(), b.constant->raw(), b.constant->nbytes());
  Value v;
  v.name = b.name + "/aligned_at_axis_" + std::to_string(axis);
  v.dtype = aligned.dtype();
  Shape s;
  for (int64_t d : dims) s.push_back(Dim{d, ""});
  v.shape = s;
  v.constant = std::move(aligned);
  const int existing = graph.find_value(v.name);
  n.inputs[1] = existing >= 0 ? existing : graph.add_value(std::move(v));
  n.attrs.erase("broadcast");
  n.attrs.erase("axis");
}

}  // namespace fusor
