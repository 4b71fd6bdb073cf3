// Builds the default-domain nodes that one ONNX Runtime contrib node (domain com.microsoft)
// expands into: constants as Constant nodes, fresh value names under the contrib node's own
// scope, and the few ops whose form changed across opsets written for the opset in use.
// Reads the contrib node's inputs and attributes for the expansions in contrib_ops.cc.
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace fusor::contrib {

class NodeBuilder {
 public:
  // `opset` is the default-domain opset the emitted nodes are read at (13 or later). `repeat`
  // counts earlier contrib nodes of the same scope() (unnamed ones share their op's), so that
  // each one's value names are its own.
  NodeBuilder(const onnx::NodeProto& source, int64_t opset, int repeat = 0);
  // The prefix of the names `source`'s expansion emits, before any repeat suffix.
  static std::string scope(const onnx::NodeProto& source);

  int64_t opset() const { return opset_; }
  // The contrib node: input/output `i` ("" when absent or empty), its input count (absent
  // trailing inputs not counted) and its attributes.
  const std::string& in(size_t i) const;
  size_t input_count() const { return static_cast<size_t>(source_.input_size()); }
  const std::string& out(size_t i) const;
  bool has_in(size_t i) const { return !in(i).empty(); }
  bool has_out(size_t i) const { return !out(i).empty(); }
  int64_t attr_int(const char* name, int64_t fallback) const;
  float attr_float(const char* name, float fallback) const;
  std::vector<int64_t> attr_ints(const char* name) const;
  std::string attr_string(const char* name, const std::string& fallback) const;
  // The contrib node's attributes among `names` that it sets, to pass on to an emitted node.
  std::vector<onnx::AttributeProto> attrs_named(std::initializer_list<const char*> names) const;
  // Throw fusor::Error (InvalidModel) when a required input is absent, (UnsupportedOp) when an
  // input in [first, last] or an output from `first` on is present.
  void require_inputs(std::initializer_list<size_t> required) const;
  // Throws fusor::Error (InvalidModel) unless the node has from `min` to `max` inputs.
  void expect_inputs(size_t min, size_t max) const;
  void forbid_inputs(size_t first, size_t last, const char* what) const;
  void forbid_outputs(size_t first, const char* what) const;
  // Throws fusor::Error (UnsupportedOp) naming the contrib node.
  [[noreturn]] void unsupported(const std::string& why) const;
  // Throws fusor::Error (InvalidModel) naming the contrib node.
  [[noreturn]] void invalid(const std::string& why) const;

  // Adds a node; returns its output, named `out` when given (a contrib output), else fresh.
  // Inputs "" are absent ones; trailing ones are dropped.
  std::string add(const char* op, std::vector<std::string> inputs, std::vector<onnx::AttributeProto> attrs = {},
                  std::string out = "");
  // Adds a node with `outputs` fresh outputs (DynamicQuantizeLinear's three).
  std::vector<std::string> add_outputs(const char* op, std::vector<std::string> inputs, size_t outputs);
  // Constants: any tensor, a float32 scalar, an int64 scalar, a 1-D int64 tensor.
  std::string constant(onnx::TensorProto t);
  std::string scalar(float v);
  std::string scalar_i64(int64_t v);
  std::string ints(const std::vector<int64_t>& v);

  // Ops whose signature depends on the opset.
  std::string reduce_mean(const std::string& x, const std::vector<int64_t>& axes, std::string out = "");
  std::string unsqueeze(const std::string& x, const std::vector<int64_t>& axes);
  // x[..., begin:end] along `axis` with constant bounds.
  std::string slice(const std::string& x, int64_t axis, int64_t begin, int64_t end);
  // Dim `axis` of x's shape as a 1-D int64 tensor of one element, or as a scalar.
  std::string dim(const std::string& x, int64_t axis);
  std::string dim_scalar(const std::string& x, int64_t axis);
  // 0, 1, ..., limit - 1 (int64) for a scalar `limit`.
  std::string arange(const std::string& limit);
  // Cast to the ONNX element type `to` (onnx::TensorProto::DataType).
  std::string cast(const std::string& x, int to);

  static onnx::AttributeProto attr(const char* name, int64_t v);
  static onnx::AttributeProto attr(const char* name, float v);
  static onnx::AttributeProto attr(const char* name, const std::vector<int64_t>& v);

  std::vector<onnx::NodeProto> take() { return std::move(nodes_); }

 private:
  std::string fresh(const char* what);
  const onnx::AttributeProto* find_attr(const char* name) const;

  const onnx::NodeProto& source_;
  int64_t opset_;
  std::string scope_;  // prefix of every emitted node and value name
  std::string where_;  // "node 'X' (op Y, domain 'com.microsoft')" for errors
  int counter_ = 0;
  std::vector<onnx::NodeProto> nodes_;
};

// Norm pieces shared by the contrib expansions and ONNX's own function ops.

// The trailing axes from `axis` to the last, as negative axes so that no rank is needed; a
// non-negative `axis` needs `rank`. Throws (InvalidModel) for an axis out of range.
std::vector<int64_t> trailing_axes(NodeBuilder& b, int64_t axis, std::optional<size_t> rank);
// RMSNorm over `axes` in the decomposed form of a torch export: x / sqrt(mean(x^2) + eps), then
// times `scale` into `out` when `scale` is given (else `out` is the normalized x); 1 / rms into
// `inv_std_out` when given. Returns the output's name (fresh when `out` is "").
std::string rms_norm(NodeBuilder& b, const std::string& x, const std::string& scale, float eps,
              const std::vector<int64_t>& axes, const std::string& out, const std::string& inv_std_out = "");

}  // namespace fusor::contrib
