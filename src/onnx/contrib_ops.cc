// Each expansion follows ONNX Runtime's contrib op spec (docs/ContribOperators.md), written in
// the node forms fusor's fusion passes match (passes/fuse_*.cc), with constants as Constant nodes.
#include "onnx/contrib_ops.h"

#include <onnx/onnx_pb.h>

#include "onnx/contrib_attention.h"
#include "onnx/contrib_builder.h"
#include "onnx/contrib_quant.h"
#include "onnx/onnx_function_ops.h"

namespace fusor {
namespace {

using contrib::NodeBuilder;
using contrib::rms_norm;
using contrib::trailing_axes;
using Ints = std::vector<int64_t>;

constexpr float kSqrt2 = 1.41421356237f;
constexpr float kSqrt2OverPi = 0.7978845608f;
constexpr float kDefaultSkipEpsilon = 1e-12f;  // ORT's default for the Skip*/Embed* norms

// x * (1 + erf(x / sqrt(2))) * 0.5, as torch exports GELU.
void erf_gelu(NodeBuilder& b, const std::string& x, const std::string& out) {
  auto e = b.add("Erf", {b.add("Div", {x, b.scalar(kSqrt2)})});
  auto m = b.add("Mul", {x, b.add("Add", {e, b.scalar(1.0f)})});
  b.add("Mul", {m, b.scalar(0.5f)}, {}, out);
}

// x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))) * 0.5.
void tanh_gelu(NodeBuilder& b, const std::string& x, const std::string& out) {
  auto cubic = b.add("Mul", {b.add("Pow", {x, b.scalar(3.0f)}), b.scalar(0.044715f)});
  auto t = b.add("Tanh", {b.add("Mul", {b.add("Add", {x, cubic}), b.scalar(kSqrt2OverPi)})});
  auto m = b.add("Mul", {x, b.add("Add", {t, b.scalar(1.0f)})});
  b.add("Mul", {m, b.scalar(0.5f)}, {}, out);
}

// LayerNorm over `axes` in the decomposed form of a torch export (fuse_layer_norm matches it),
// with the optional saved mean and 1/stddev.
void layer_norm(NodeBuilder& b, const std::string& x, const std::string& gamma, const std::string& beta, float eps,
                const Ints& axes, const std::string& out, const std::string& mean_out = "",
                const std::string& inv_std_out = "") {
  auto mean = b.reduce_mean(x, axes, mean_out);
  auto centered = b.add("Sub", {x, mean});
  auto var = b.reduce_mean(b.add("Pow", {centered, b.scalar(2.0f)}), axes);
  auto stddev = b.add("Sqrt", {b.add("Add", {var, b.scalar(eps)})});
  if (!inv_std_out.empty()) b.add("Reciprocal", {stddev}, {}, inv_std_out);
  auto normed = b.add("Div", {centered, stddev}, {}, gamma.empty() && beta.empty() ? out : "");
  if (gamma.empty() && beta.empty()) return;
  if (!gamma.empty()) normed = b.add("Mul", {normed, gamma}, {}, beta.empty() ? out : "");
  if (!beta.empty()) b.add("Add", {normed, beta}, {}, out);
}

// input + bias + skip (bias first, as a projection's bias Add precedes the residual Add).
std::string skip_sum(NodeBuilder& b, size_t bias_input, const std::string& out) {
  auto x = b.in(0);
  if (b.has_in(bias_input)) x = b.add("Add", {x, b.in(bias_input)});
  return b.add("Add", {x, b.in(1)}, {}, out);
}

void fused_matmul(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1});
  if (b.attr_int("transBatchA", 0) || b.attr_int("transBatchB", 0))
    b.unsupported("transBatchA/transBatchB are not supported");
  auto operand = [&](size_t i, const char* trans) {
    if (!b.attr_int(trans, 0)) return b.in(i);
    auto shape = ex.shape_of(b.in(i));
    if (!shape) b.unsupported(std::string(trans) + " needs the rank of input " + std::to_string(i) + ", not known at import");
    if (shape->size() < 2) b.invalid(std::string(trans) + " on an input of rank " + std::to_string(shape->size()));
    Ints perm;
    for (int64_t a = 0; a < static_cast<int64_t>(shape->size()); ++a) perm.push_back(a);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    return b.add("Transpose", {b.in(i)}, {NodeBuilder::attr("perm", perm)});
  };
  auto a = operand(0, "transA");
  auto c = operand(1, "transB");
  const float alpha = b.attr_float("alpha", 1.0f);
  auto y = b.add("MatMul", {a, c}, {}, alpha == 1.0f ? b.out(0) : "");
  if (alpha != 1.0f) b.add("Mul", {y, b.scalar(alpha)}, {}, b.out(0));
}

// A norm's output (and a skip norm's sum) has its input's shape, which later expansions read.
void same_shape(ContribExpander& ex, NodeBuilder& b, std::initializer_list<size_t> outputs) {
  if (auto shape = ex.shape_of(b.in(0)))
    for (size_t o : outputs) ex.set_shape(b.out(o), *shape);
}

void skip_layer_norm(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1, 2});
  auto sum = skip_sum(b, 4, b.out(3));
  layer_norm(b, sum, b.in(2), b.in(3), b.attr_float("epsilon", kDefaultSkipEpsilon), {-1}, b.out(0), b.out(1),
             b.out(2));
  same_shape(ex, b, {0, 3});
}

void simplified_layer_norm(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1});
  auto shape = ex.shape_of(b.in(0));
  auto axes = trailing_axes(b, b.attr_int("axis", -1), shape ? std::optional<size_t>(shape->size()) : std::nullopt);
  rms_norm(b, b.in(0), b.in(1), b.attr_float("epsilon", 1e-5f), axes, b.out(0), b.out(1));
  same_shape(ex, b, {0});
}

void skip_simplified_layer_norm(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 1, 2});
  if (b.has_out(1)) b.unsupported("output 1 (mean) is not defined for the simplified norm");
  auto sum = skip_sum(b, 3, b.out(3));
  rms_norm(b, sum, b.in(2), b.attr_float("epsilon", kDefaultSkipEpsilon), {-1}, b.out(0), b.out(2));
  same_shape(ex, b, {0, 3});
}

void embed_layer_norm(ContribExpander& ex, NodeBuilder& b) {
  b.require_inputs({0, 2, 3, 5, 6});
  if (b.has_in(1) != b.has_in(4)) b.invalid("segment_ids and segment_embedding come together");
  auto sum = b.add("Gather", {b.in(2), b.in(0)});
  if (b.has_in(1)) sum = b.add("Add", {sum, b.add("Gather", {b.in(4), b.in(1)})});
  // Positions 0..S-1 unless position_ids are given.
  auto pos = b.has_in(8) ? b.add("Gather", {b.in(3), b.in(8)})
                         : b.add("Slice", {b.in(3), b.ints({0}), b.dim(b.in(0), 1), b.ints({0})});
  sum = b.add("Add", {sum, pos}, {}, b.out(2));
  layer_norm(b, sum, b.in(5), b.in(6), b.attr_float("epsilon", kDefaultSkipEpsilon), {-1}, b.out(0));
  ex.set_rank(b.out(0), 3);
  if (b.has_out(2)) ex.set_rank(b.out(2), 3);
  if (!b.has_out(1)) return;
  // mask_index: the number of ones in each row of the mask (its valid length), zeros without one.
  if (b.has_in(7)) {
    b.add("ReduceSum", {b.in(7), b.ints({1})}, {NodeBuilder::attr("keepdims", int64_t{0})}, b.out(1));
    ex.share("ids of mask_index " + b.out(1), b.in(0));
  } else {
    onnx::AttributeProto zero;
    zero.set_name("value");
    zero.set_type(onnx::AttributeProto::TENSOR);
    zero.mutable_t()->set_data_type(onnx::TensorProto::INT32);
    zero.mutable_t()->add_dims(1);
    zero.mutable_t()->add_int32_data(0);
    b.add("ConstantOfShape", {b.dim(b.in(0), 0)}, {zero}, b.out(1));
  }
  ex.set_rank(b.out(1), 1);
}

void bias_add(ContribExpander&, NodeBuilder& b) {
  b.require_inputs({0, 1, 2});
  b.add("Add", {b.add("Add", {b.in(0), b.in(1)}), b.in(2)}, {}, b.out(0));
}

void bias_gelu(ContribExpander&, NodeBuilder& b) {
  b.require_inputs({0, 1});
  erf_gelu(b, b.add("Add", {b.in(0), b.in(1)}), b.out(0));
}

void gelu(ContribExpander&, NodeBuilder& b) {
  b.require_inputs({0});
  erf_gelu(b, b.in(0), b.out(0));
}

void fast_gelu(ContribExpander&, NodeBuilder& b) {
  b.require_inputs({0});
  tanh_gelu(b, b.has_in(1) ? b.add("Add", {b.in(0), b.in(1)}) : b.in(0), b.out(0));
}

void quick_gelu(ContribExpander&, NodeBuilder& b) {
  b.require_inputs({0});
  auto s = b.add("Sigmoid", {b.add("Mul", {b.in(0), b.scalar(b.attr_float("alpha", 1.702f))})});
  b.add("Mul", {b.in(0), s}, {}, b.out(0));
}

using Expansion = void (*)(ContribExpander&, NodeBuilder&);

// Where an op of the table lives.
enum class Domains { Contrib, ContribAndOnnx, Onnx };

struct ContribOp {
  const char* name;
  Domains domains;
  Expansion expand;
};

constexpr ContribOp kContribOps[] = {
    {"FusedMatMul", Domains::Contrib, fused_matmul},
    {"BiasGelu", Domains::Contrib, bias_gelu},
    {"FastGelu", Domains::Contrib, fast_gelu},
    {"Gelu", Domains::Contrib, gelu},
    {"QuickGelu", Domains::Contrib, quick_gelu},
    {"BiasAdd", Domains::Contrib, bias_add},
    {"SkipLayerNormalization", Domains::Contrib, skip_layer_norm},
    {"SimplifiedLayerNormalization", Domains::ContribAndOnnx, simplified_layer_norm},
    {"SkipSimplifiedLayerNormalization", Domains::Contrib, skip_simplified_layer_norm},
    {"EmbedLayerNormalization", Domains::Contrib, embed_layer_norm},
    {"Attention", Domains::Contrib, contrib::attention},
    {"RotaryEmbedding", Domains::Contrib, contrib::rotary_embedding},
    {"GroupQueryAttention", Domains::Contrib, contrib::group_query_attention},
    {"QLinearAdd", Domains::Contrib, contrib::qlinear_add},
    {"QLinearMul", Domains::Contrib, contrib::qlinear_mul},
    {"QLinearSigmoid", Domains::Contrib, contrib::qlinear_sigmoid},
    {"QLinearLeakyRelu", Domains::Contrib, contrib::qlinear_leaky_relu},
    {"QLinearGlobalAveragePool", Domains::Contrib, contrib::qlinear_global_average_pool},
    {"QLinearAveragePool", Domains::Contrib, contrib::qlinear_average_pool},
    {"QLinearConcat", Domains::Contrib, contrib::qlinear_concat},
    {"QLinearSoftmax", Domains::Contrib, contrib::qlinear_softmax},
    {"QGemm", Domains::Contrib, contrib::qgemm},
    {"MatMulIntegerToFloat", Domains::Contrib, contrib::matmul_integer_to_float},
    {"DynamicQuantizeMatMul", Domains::Contrib, contrib::dynamic_quantize_matmul},
    {"MatMulNBits", Domains::Contrib, contrib::matmul_nbits},
    {"Attention", Domains::Onnx, contrib::onnx_attention},
    {"RMSNormalization", Domains::Onnx, contrib::onnx_rms_normalization},
    {"RotaryEmbedding", Domains::Onnx, contrib::onnx_rotary_embedding},
    {"Swish", Domains::Onnx, contrib::onnx_swish},
    {"TensorScatter", Domains::Onnx, contrib::onnx_tensor_scatter},
};

const ContribOp* find_op(const std::string& domain, const std::string& op_type) {
  const bool contrib = domain == kOrtContribDomain;
  if (!contrib && !domain.empty()) return nullptr;
  for (const auto& op : kContribOps)
    if (op_type == op.name && (op.domains == Domains::ContribAndOnnx || contrib == (op.domains == Domains::Contrib)))
      return &op;
  return nullptr;
}

}  // namespace

bool is_expanded_contrib_op(const std::string& domain, const std::string& op_type) {
  return find_op(domain, op_type) != nullptr;
}

std::optional<std::vector<int64_t>> ContribExpander::shape_of(const std::string& name) const {
  // The importer's lookup consults the recorded shapes itself.
  return shapes_ ? (*shapes_)(name) : recorded_shape(name);
}

std::optional<std::vector<int64_t>> ContribExpander::recorded_shape(const std::string& name) const {
  auto it = shapes_of_.find(name);
  return it == shapes_of_.end() ? std::nullopt : std::optional<std::vector<int64_t>>(it->second);
}

void ContribExpander::set_rank(const std::string& name, size_t rank) {
  if (!name.empty()) shapes_of_[name] = std::vector<int64_t>(rank, -1);
}

void ContribExpander::set_shape(const std::string& name, std::vector<int64_t> dims) {
  if (!name.empty()) shapes_of_[name] = std::move(dims);
}

std::optional<std::string> ContribExpander::shared(const std::string& key) const {
  auto it = shared_.find(key);
  return it == shared_.end() ? std::nullopt : std::optional<std::string>(it->second);
}

void ContribExpander::share(const std::string& key, const std::string& value) { shared_[key] = value; }

DType ContribExpander::type_of(const std::string& name) const {
  return types_ ? (*types_)(name) : DType::Undefined;
}

const Tensor* ContribExpander::constant(const std::string& name) const {
  return constants_ ? (*constants_)(name) : nullptr;
}

std::vector<onnx::NodeProto> ContribExpander::expand(const onnx::NodeProto& node, int64_t opset,
                                                     const ShapeLookup& shapes, const TypeLookup& types,
                                                     const ConstantLookup& constants) {
  const ContribOp* op = find_op(node.domain() == "ai.onnx" ? "" : node.domain(), node.op_type());
  NodeBuilder b(node, opset, scope_uses_[NodeBuilder::scope(node)]++);
  if (!op) b.unsupported("unsupported operator");
  if (node.output_size() == 0 || node.output(0).empty()) b.invalid("output 0 is required");
  shapes_ = &shapes;
  types_ = &types;
  constants_ = &constants;
  try {
    op->expand(*this, b);
  } catch (...) {
    shapes_ = nullptr;
    types_ = nullptr;
    constants_ = nullptr;
    throw;
  }
  shapes_ = nullptr;
  types_ = nullptr;
  constants_ = nullptr;
  return b.take();
}

}  // namespace fusor
