#include "ir/op_table.h"

#include <array>
#include <string>
#include <unordered_map>

#include "ir/op_functions.h"

namespace fusor {

const char* category_name(OpCategory c) {
  switch (c) {
    case OpCategory::Elementwise: return "elementwise";
    case OpCategory::Broadcast: return "broadcast";
    case OpCategory::Injective: return "injective";
    case OpCategory::Reduction: return "reduction";
    case OpCategory::Contraction: return "contraction";
    case OpCategory::Opaque: return "opaque";
  }
  return "?";
}

namespace {
constexpr OpCategory Elementwise = OpCategory::Elementwise;
constexpr OpCategory Broadcast = OpCategory::Broadcast;
constexpr OpCategory Injective = OpCategory::Injective;
constexpr OpCategory Reduction = OpCategory::Reduction;
constexpr OpCategory Contraction = OpCategory::Contraction;
constexpr OpCategory Opaque = OpCategory::Opaque;

const std::array<OpInfo, static_cast<size_t>(Op::Count)> kOps = {{
#define FUSOR_OP_ROW(name, cat) {Op::name, #name, cat, &shape::name},
    FUSOR_OPS(FUSOR_OP_ROW)
#undef FUSOR_OP_ROW
}};
}  // namespace

const OpInfo& op_info(Op op) { return kOps.at(static_cast<size_t>(op)); }

std::span<const OpInfo> all_ops() { return kOps; }

bool op_writes_inputs(Op op) { return op == Op::CachedAttention; }

std::optional<Op> op_from_name(std::string_view name) {
  static const auto* by_name = [] {
    auto* m = new std::unordered_map<std::string, Op>();
    for (const auto& info : kOps) (*m)[info.name] = info.op;
    return m;
  }();
  auto it = by_name->find(std::string(name));
  if (it == by_name->end()) return std::nullopt;
  return it->second;
}

}  // namespace fusor
