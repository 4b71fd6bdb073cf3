// ONNX Runtime's contrib ops, as models optimized by ORT's transformer optimizer contain them
// (domain com.microsoft; SimplifiedLayerNormalization also in the default domain), and ONNX's
// own ops of opsets 23 and 24 that older ops compute (onnx_function_ops.h). The importer
// expands each into default-domain nodes that compute the op's spec, in the forms the plain
// exports have, so fusor's passes fuse them as they fuse a plain model: SkipLayerNormalization
// and EmbedLayerNormalization end in the decomposed LayerNorm, BiasGelu/FastGelu/Gelu in GELU's
// erf or tanh form, Attention in the Reshape/Transpose/MatMul/Softmax pattern of a BERT export.
// The quantized ones (contrib_quant.cc) become DequantizeLinear -> float op -> QuantizeLinear, the
// QDQ form that fusor's int8 fusion matches. Only float32 activations; what an op needs beyond
// that is rejected with UnsupportedOp.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fusor/tensor.h"

namespace onnx {
class NodeProto;
}

namespace fusor {

inline constexpr const char* kOrtContribDomain = "com.microsoft";

// Whether the importer expands this op (`domain` "" for ONNX's own).
bool is_expanded_contrib_op(const std::string& domain, const std::string& op_type);

// The static shape of a value where the importer knows it (-1 for a dim of unknown size), or
// nullopt for an unknown rank.
using ShapeLookup = std::function<std::optional<std::vector<int64_t>>(const std::string& name)>;
// The element type of a value where the importer knows it, else DType::Undefined.
using TypeLookup = std::function<DType(const std::string& name)>;
// The value of an initializer or Constant by name, or nullptr when the value is computed.
using ConstantLookup = std::function<const Tensor*(const std::string& name)>;

// One per import: it remembers the ranks of the outputs it defined (the importer knows only the
// shapes the model declares), which later expansions read (Attention's mask_index).
class ContribExpander {
 public:
  // The default-domain nodes, at default opset `opset` (13 or later), that compute `node`;
  // they read its inputs and write its outputs by their names. Throws fusor::Error naming the
  // node when an input or attribute is beyond what the expansion supports.
  std::vector<onnx::NodeProto> expand(const onnx::NodeProto& node, int64_t opset, const ShapeLookup& shapes,
                                      const TypeLookup& types, const ConstantLookup& constants);

  // Shape of `name` from the importer, or the shape (or rank) an earlier expansion gave it.
  std::optional<std::vector<int64_t>> shape_of(const std::string& name) const;
  // The element type of `name` where the importer knows it (DType::Undefined otherwise).
  DType type_of(const std::string& name) const;
  // The constant value of `name` (MatMulNBits unpacks its weight at import), or nullptr.
  const Tensor* constant(const std::string& name) const;
  // The shape an earlier expansion recorded for `name` (set_shape or set_rank), if any.
  std::optional<std::vector<int64_t>> recorded_shape(const std::string& name) const;
  // Records the rank of an output that an expansion defines.
  void set_rank(const std::string& name, size_t rank);
  // Records the shape (-1 for a dim of unknown size) of an output that an expansion defines.
  void set_shape(const std::string& name, std::vector<int64_t> dims);
  // A value that later expansions reuse instead of computing it again (one attention mask bias
  // for every layer, as the plain export has), by key. Contrib nodes live in the main graph
  // (fusor's own function bodies never hold them), so a shared value is always in scope.
  std::optional<std::string> shared(const std::string& key) const;
  void share(const std::string& key, const std::string& value);

 private:
  const ShapeLookup* shapes_ = nullptr;  // during expand()
  const TypeLookup* types_ = nullptr;
  const ConstantLookup* constants_ = nullptr;
  std::map<std::string, std::vector<int64_t>> shapes_of_;
  std::map<std::string, std::string> shared_;
  std::map<std::string, int> scope_uses_;  // contrib nodes expanded so far, by NodeBuilder::scope
};

}  // namespace fusor
