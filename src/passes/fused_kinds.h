// Fused kinds as data: one row per kind of fused node the passes make. A fused node has op Fused,
// domain "fusor" and, as its op_type, its kind's name; the CPU backend picks its kernel and the
// gate's fault injection picks its targets by kind, so all of them name kinds through this table
// (fused_kind_name(FusedKind::LayerNorm), fused_kind_from_name(node.op_type)), never a literal.
//
// The attribute contract (fused_kinds.cc) lists, per pass and kind it makes, every attribute the
// pass sets on the node and its type: what the kind's kernel factory may rely on. A pass sets no
// attribute outside its contract; tests/unit/fused_kind_contract_test.cc checks every pass.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ir/graph.h"

namespace fusor {

// X(kind, description): `kind` is the enum value and the fused node's op_type.
#define FUSOR_FUSED_KINDS(X)                                                                          \
  X(LayerNorm, "layer normalization over the trailing axes, with optional scale and bias")           \
  X(Gelu, "GELU in its erf or tanh form")                                                             \
  X(Attention, "one attention block: Q K^T, scale, causal and additive masks, softmax, x V")         \
  X(FusedMatMul, "a MatMul or Gemm with its bias, activation and residual; or projections of one input") \
  X(FusedConv, "a Conv with its bias, activation and residual")                                       \
  X(Elementwise, "a DAG of elementwise and broadcast ops, run as one tiled loop")                    \
  X(QuantizedConv, "a Conv between DequantizeLinear and QuantizeLinear, on int8 operands, requantized") \
  X(QuantizedMaxPool, "a MaxPool between DequantizeLinear and QuantizeLinear of one scale, on the integers") \
  X(QuantizedMatMul, "a QDQ MatMul/Gemm, or a MatMulInteger with its float rescale, on the int8 matmul") \
  X(GroupNorm, "group normalization with a scale and shift per channel, and optionally SiLU")          \
  X(Rotary, "rotary position embedding, rotate-half form: x * cos + Concat(-x2, x1) * sin")

enum class FusedKind {
#define FUSOR_FUSED_KIND_ENUM(kind, description) kind,
  FUSOR_FUSED_KINDS(FUSOR_FUSED_KIND_ENUM)
#undef FUSOR_FUSED_KIND_ENUM
  Count
};

struct FusedKindInfo {
  FusedKind kind;
  const char* name;         // the fused node's op_type
  const char* description;
};

const FusedKindInfo& fused_kind_info(FusedKind kind);
const char* fused_kind_name(FusedKind kind);
std::optional<FusedKind> fused_kind_from_name(std::string_view name);
std::span<const FusedKindInfo> all_fused_kinds();
// Whether `node` is a fused node of `kind`.
bool is_fused_kind(const Node& node, FusedKind kind);

// The "operands" attribute of QuantizedConv and QuantizedMatMul: per role, the index of the node
// input that holds it (-1 when absent). A QuantizedConv's Bias is an int32 constant with
// BiasScale, or a float32 constant without; a QuantizedMatMul's AccScale is what its int32
// result is multiplied by (x_scale * w_scale, per column or one), its Bias a float32 row, and
// its Residual (fuse_gemm_epilogue, float32 output only) a float32 tensor of the output's shape
// added after the activation.
enum class QuantizedOperand {
  X, XScale, XZeroPoint, W, WScale, WZeroPoint, Bias, BiasScale, YScale, YZeroPoint, AccScale, Residual, Count
};

// The attribute contract.
enum class AttrType { Int, Float, String, Ints };
const char* attr_type_name(AttrType type);

struct ContractAttr {
  std::string_view name;
  AttrType type;
  bool always = true;  // false: set only in some cases (e.g. alpha for a leaky_relu activation)
};

// The attributes `pass` sets on the nodes of `kind` it makes.
struct KindContract {
  FusedKind kind;
  std::string_view pass;
  std::span<const ContractAttr> attrs;
};

// Every (kind, pass) pair the passes make, in pipeline order.
std::span<const KindContract> fused_kind_contracts();
// The contract of `kind` as made by `pass`; nullptr when that pass does not make that kind.
const KindContract* fused_kind_contract(FusedKind kind, std::string_view pass);
// Why `node` breaks `contract`: an attribute it always sets missing, one of another type, or one
// the contract does not list; nullopt when it keeps it.
std::optional<std::string> contract_violation(const Node& node, const KindContract& contract);

}  // namespace fusor
