#include "passes/fused_kinds.h"

#include <array>
#include <variant>

namespace fusor {
namespace {

const std::array<FusedKindInfo, static_cast<size_t>(FusedKind::Count)> kKinds = {{
#define FUSOR_FUSED_KIND_ROW(kind, description) {FusedKind::kind, #kind, description},
    FUSOR_FUSED_KINDS(FUSOR_FUSED_KIND_ROW)
#undef FUSOR_FUSED_KIND_ROW
}};

constexpr AttrType Int = AttrType::Int, Float = AttrType::Float, String = AttrType::String, Ints = AttrType::Ints;
constexpr bool kSometimes = false;

// fuse_layer_norm; read by the LayerNormalization kernel it stands in for (has_scale, has_bias:
// whether gamma and beta follow X among the inputs; rms: RMSNorm, no centering).
constexpr ContractAttr kLayerNorm[] = {
    {"axis", Int}, {"epsilon", Float}, {"has_scale", Int}, {"has_bias", Int}, {"rms", Int, kSometimes}};
// fuse_gelu: "none" (erf) or "tanh", as ONNX Gelu.
constexpr ContractAttr kGelu[] = {{"approximate", String}};
// fuse_attention: mask is "additive" (the fourth input) or "none"; fill is the causal mask's value;
// segments, set by packing (passes/pack_tokens.h), is the index of the sequence-starts input.
constexpr ContractAttr kAttention[] = {{"num_heads", Int}, {"head_dim", Int}, {"scale", Float},   {"causal", Int},
                                       {"fill", Float},    {"mask", String},  {"segments", Int, kSometimes}};
// merge_projections: p projections of one input; splits[i] = Ni, biases[i] = 1 when i has a bias.
constexpr ContractAttr kMergedMatMul[] = {{"projections", Int}, {"splits", Ints}, {"biases", Ints}};
// fuse_gemm_epilogue on MatMul/Gemm: activation is "none", "relu", "gelu", ... (alpha for leaky_relu).
constexpr ContractAttr kEpilogueMatMul[] = {{"has_bias", Int},
                                            {"has_residual", Int},
                                            {"activation", String},
                                            {"trans_b", Int},
                                            {"alpha", Float, kSometimes}};
// A Conv's own attributes, where it had them, on the fused nodes that stand for one.
constexpr std::array<ContractAttr, 6> kConvAttrs = {{{"kernel_shape", Ints, kSometimes},
                                                     {"strides", Ints, kSometimes},
                                                     {"pads", Ints, kSometimes},
                                                     {"dilations", Ints, kSometimes},
                                                     {"group", Int, kSometimes},
                                                     {"auto_pad", String, kSometimes}}};

template <size_t A, size_t B>
constexpr std::array<ContractAttr, A + B> join(const std::array<ContractAttr, A>& a, const std::array<ContractAttr, B>& b) {
  std::array<ContractAttr, A + B> out{};
  for (size_t i = 0; i < A; ++i) out[i] = a[i];
  for (size_t i = 0; i < B; ++i) out[A + i] = b[i];
  return out;
}

// fuse_gemm_epilogue on Conv: the same epilogue, plus the Conv's own attributes.
constexpr auto kEpilogueConv = join(std::array<ContractAttr, 4>{{{"has_bias", Int},
                                                                 {"has_residual", Int},
                                                                 {"activation", String},
                                                                 {"alpha", Float, kSometimes}}},
                                    kConvAttrs);

// fuse_quantized on Conv: operands (QuantizedOperand order), activation "relu" or "none", and the
// Conv's own attributes.
constexpr auto kQuantizedConv = join(std::array<ContractAttr, 2>{{{"operands", Ints}, {"activation", String}}}, kConvAttrs);

// fuse_quantized on MaxPool: the MaxPool's own attributes where it had them.
constexpr ContractAttr kQuantizedMaxPool[] = {{"kernel_shape", Ints},
                                              {"strides", Ints, kSometimes},
                                              {"pads", Ints, kSometimes},
                                              {"dilations", Ints, kSometimes},
                                              {"ceil_mode", Int, kSometimes},
                                              {"storage_order", Int, kSometimes},
                                              {"auto_pad", String, kSometimes}};

// fuse_quantized on MatMulInteger (dynamic) or a QDQ MatMul/Gemm (static): operands
// (QuantizedOperand order); a static unit also trans_b (a Gemm's transB) and activation.
constexpr ContractAttr kQuantizedMatMul[] = {
    {"operands", Ints}, {"trans_b", Int, kSometimes}, {"activation", String, kSometimes}};
// fuse_gemm_epilogue on a dynamic QuantizedMatMul (float32 out): the same, with the activation
// and residual after its bias (alpha for leaky_relu).
constexpr ContractAttr kQuantizedMatMulEpilogue[] = {
    {"operands", Ints}, {"activation", String}, {"alpha", Float, kSometimes}};
// fuse_group_norm: the inputs are X, scale and bias per group, gamma and beta per channel;
// activation is "silu" or "none".
constexpr ContractAttr kGroupNorm[] = {{"groups", Int}, {"epsilon", Float}, {"activation", String}};

const KindContract kContracts[] = {
    {FusedKind::QuantizedConv, "fuse_quantized", kQuantizedConv},
    {FusedKind::QuantizedMaxPool, "fuse_quantized", kQuantizedMaxPool},
    {FusedKind::QuantizedMatMul, "fuse_quantized", kQuantizedMatMul},
    {FusedKind::QuantizedMatMul, "fuse_gemm_epilogue", kQuantizedMatMulEpilogue},
    {FusedKind::LayerNorm, "fuse_layer_norm", kLayerNorm},
    {FusedKind::GroupNorm, "fuse_group_norm", kGroupNorm},
    {FusedKind::Gelu, "fuse_gelu", kGelu},
    {FusedKind::Attention, "fuse_attention", kAttention},
    {FusedKind::Rotary, "fuse_rotary", {}},
    {FusedKind::FusedMatMul, "merge_projections", kMergedMatMul},
    {FusedKind::FusedMatMul, "fuse_gemm_epilogue", kEpilogueMatMul},
    {FusedKind::FusedConv, "fuse_gemm_epilogue", kEpilogueConv},
    {FusedKind::Elementwise, "fuse_elementwise", {}},
};

bool holds(const Attribute& a, AttrType type) {
  switch (type) {
    case AttrType::Int: return std::holds_alternative<int64_t>(a);
    case AttrType::Float: return std::holds_alternative<float>(a);
    case AttrType::String: return std::holds_alternative<std::string>(a);
    case AttrType::Ints: return std::holds_alternative<std::vector<int64_t>>(a);
  }
  return false;
}

}  // namespace

const FusedKindInfo& fused_kind_info(FusedKind kind) { return kKinds.at(static_cast<size_t>(kind)); }
const char* fused_kind_name(FusedKind kind) { return fused_kind_info(kind).name; }

std::optional<FusedKind> fused_kind_from_name(std::string_view name) {
  for (const FusedKindInfo& k : kKinds)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

std::span<const FusedKindInfo> all_fused_kinds() { return kKinds; }

bool is_fused_kind(const Node& node, FusedKind kind) { return node.op == Op::Fused && node.op_type == fused_kind_name(kind); }

const char* attr_type_name(AttrType type) {
  switch (type) {
    case AttrType::Int: return "int";
    case AttrType::Float: return "float";
    case AttrType::String: return "string";
    case AttrType::Ints: return "ints";
  }
  return "?";
}

std::span<const KindContract> fused_kind_contracts() { return kContracts; }

const KindContract* fused_kind_contract(FusedKind kind, std::string_view pass) {
  for (const KindContract& c : kContracts)
    if (c.kind == kind && c.pass == pass) return &c;
  return nullptr;
}

std::optional<std::string> contract_violation(const Node& node, const KindContract& contract) {
  const std::string who = node.describe() + " (" + fused_kind_name(contract.kind) + " from " + std::string(contract.pass) + ")";
  for (const ContractAttr& a : contract.attrs) {
    auto it = node.attrs.find(std::string(a.name));
    if (it == node.attrs.end()) {
      if (a.always) return who + " lacks attribute '" + std::string(a.name) + "'";
    } else if (!holds(it->second, a.type)) {
      return who + ": attribute '" + std::string(a.name) + "' is not of type " + attr_type_name(a.type);
    }
  }
  for (const auto& [name, value] : node.attrs) {
    bool listed = false;
    for (const ContractAttr& a : contract.attrs) listed = listed || a.name == name;
    if (!listed) return who + " carries attribute '" + name + "', which its contract does not list";
  }
  return std::nullopt;
}

}  // namespace fusor
