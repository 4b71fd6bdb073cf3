#include "onnx/op_support.h"

#include <algorithm>
#include <map>
#include <string_view>

#include "ir/op_pending.h"
#include "ir/op_table.h"
#include "onnx/contrib_ops.h"
#include "onnx/exporter.h"

namespace fusor {
namespace {

std::string node_label(const onnx::NodeProto& n, int index) {
  return n.name().empty() ? "#" + std::to_string(index) : n.name();
}

// The ai.onnx.ml ops fusor implements, each with an op row of the same name (ir/op_rows_ml.h).
constexpr std::string_view kOnnxMlOps[] = {"Binarizer", "ArrayFeatureExtractor", "TreeEnsemble"};

bool is_onnx_ml_op(std::string_view op_type) { return std::ranges::find(kOnnxMlOps, op_type) != std::end(kOnnxMlOps); }

// fusor's own ops that have an op row (ir/op_rows_decode.h): nodes of domain "fusor" of these
// names run as that row; other names there are fused nodes' functions.
constexpr std::string_view kFusorOps[] = {"CachedAttention"};

bool is_fusor_op(std::string_view op_type) { return std::ranges::find(kFusorOps, op_type) != std::end(kFusorOps); }

using Opsets = std::map<std::string, int64_t>;

void count_uses(const onnx::GraphProto& g, const Opsets& opsets, std::vector<OpUse>& uses,
                std::map<std::string, size_t>& index) {
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    const std::string key = domain + "::" + n.op_type();
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, uses.size()).first;
      auto opset = opsets.find(domain);
      uses.push_back({domain, n.op_type(), opset == opsets.end() ? 0 : opset->second, 0, node_label(n, i),
                      unsupported_reason(domain, n.op_type())});
    }
    ++uses[it->second].count;
    for (const auto& a : n.attribute()) {
      if (a.has_g()) count_uses(a.g(), opsets, uses, index);
      for (const auto& sub : a.graphs()) count_uses(sub, opsets, uses, index);
    }
  }
}

}  // namespace

std::optional<Op> op_for_node(const std::string& domain, const std::string& op_type) {
  if (domain == kOnnxMlDomain) return is_onnx_ml_op(op_type) ? op_from_name(op_type) : std::nullopt;
  if (domain == kFusorDomain) return is_fusor_op(op_type) ? op_from_name(op_type) : std::nullopt;
  if ((!domain.empty() && domain != "ai.onnx") || is_onnx_ml_op(op_type) || is_fusor_op(op_type)) return std::nullopt;
  auto op = op_from_name(op_type);
  if (op == Op::Fused) return std::nullopt;  // fusor's own: only as a function call in domain "fusor"
  return op;
}

std::string unsupported_reason(const std::string& domain, const std::string& op_type) {
  if (domain == kFusorDomain || is_expanded_contrib_op(domain == "ai.onnx" ? "" : domain, op_type)) return "";
  if (domain == kOnnxMlDomain && !op_for_node(domain, op_type)) return "not an ai.onnx.ml operator fusor implements";
  if (domain == kOrtContribDomain) return std::string("not a ") + kOrtContribDomain + " operator fusor implements";
  if (!domain.empty() && domain != "ai.onnx" && domain != kOnnxMlDomain) return "domain '" + domain + "' is not supported";
  if (op_type == "Constant" && domain != kOnnxMlDomain) return "";
  auto op = op_for_node(domain, op_type);
  if (!op) return "not an operator fusor implements";
  if (op_is_pending(*op)) return "not implemented yet";
  return "";
}

std::vector<OpUse> op_uses(const onnx::ModelProto& model) {
  std::vector<OpUse> uses;
  std::map<std::string, size_t> index;
  Opsets opsets;
  for (const auto& o : model.opset_import()) opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = o.version();
  count_uses(model.graph(), opsets, uses, index);
  return uses;
}

std::string unsupported_summary(const std::vector<OpUse>& uses) {
  std::string out;
  int n = 0;
  for (const auto& u : uses) {
    if (u.unsupported.empty()) continue;
    out += (n++ ? ", " : "") + u.op_type + " (" + (u.domain.empty() ? "ai.onnx" : u.domain) + " opset " +
           std::to_string(u.opset) + ", first at node '" + u.first_node + "')";
  }
  if (n == 0) return "";
  return std::to_string(n) + (n == 1 ? " unsupported operator: " : " unsupported operators: ") + out;
}

}  // namespace fusor
