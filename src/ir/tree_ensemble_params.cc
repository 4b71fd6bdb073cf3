#include "ir/tree_ensemble_params.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ir/shape_util.h"

namespace fusor {
namespace {

// The output has one column per target: bound it before anything is allocated.
constexpr int64_t kMaxTargets = int64_t{1} << 24;

std::string str(int64_t v) { return std::to_string(v); }

// A tensor attribute's elements as doubles (empty when absent and not required).
std::vector<double> tensor_values(const Node& node, const char* name, bool required) {
  const Tensor* t = node.attr_tensor(name);
  if (!t) {
    if (required) fail(node, std::string("missing required attribute '") + name + "'");
    return {};
  }
  switch (t->dtype()) {
    case DType::Float32: case DType::Float64: case DType::UInt8: case DType::Int8:
    case DType::Int32: case DType::Int64: break;
    default: fail(node, std::string("attribute '") + name + "' has unsupported dtype " + dtype_name(t->dtype()));
  }
  std::vector<double> out(static_cast<size_t>(t->numel()));
  for (size_t i = 0; i < out.size(); ++i) out[i] = t->scalar_as_double(static_cast<int64_t>(i));
  return out;
}

std::vector<int64_t> required_ints(const Node& node, const char* name) {
  if (!node.has_attr(name)) fail(node, std::string("missing required attribute '") + name + "'");
  return node.attr_ints(name);
}

void require_length(const Node& node, const char* name, size_t got, size_t want, const char* like) {
  if (got != want)
    fail(node, std::string("attribute '") + name + "' has " + str(static_cast<int64_t>(got)) + " entries, '" + like +
                   "' has " + str(static_cast<int64_t>(want)));
}

bool flag(const Node& node, const char* name, int64_t v) {
  if (v != 0 && v != 1) fail(node, std::string("attribute '") + name + "' holds " + str(v) + ", expected 0 or 1");
  return v == 1;
}

double at_precision(double v, DType x_dtype) { return x_dtype == DType::Float32 ? static_cast<float>(v) : v; }

// The Member nodes' sets, in node order, each closed by a NaN (ONNX's encoding).
void read_member_sets(const Node& node, TreeEnsembleSpec& s, DType x_dtype) {
  const std::vector<double> values = tensor_values(node, "membership_values", false);
  size_t next = 0;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    TreeNodeSpec& n = s.nodes[i];
    if (n.mode != TreeBranch::Member) continue;
    if (next >= values.size())
      fail(node, "attribute 'membership_values' has fewer NaN-terminated sets than there are BRANCH_MEMBER nodes");
    while (next < values.size() && !std::isnan(values[next])) n.members.push_back(at_precision(values[next++], x_dtype));
    if (next == values.size()) fail(node, "attribute 'membership_values' must close every set with a NaN");
    ++next;  // the NaN
    std::sort(n.members.begin(), n.members.end());
  }
  if (next != values.size())
    fail(node, "attribute 'membership_values' has more sets than there are BRANCH_MEMBER nodes");
}

// Node links must form a DAG, or a walk would never reach a leaf (iterative three-colour DFS).
void reject_cycles(const Node& node, const TreeEnsembleSpec& s) {
  enum : uint8_t { Unseen, OnPath, Done };
  std::vector<uint8_t> state(s.nodes.size(), Unseen);
  std::vector<std::pair<size_t, int>> stack;  // node, next branch to visit
  for (size_t root = 0; root < s.nodes.size(); ++root) {
    if (state[root] != Unseen) continue;
    state[root] = OnPath;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [at, branch] = stack.back();
      if (branch == 2) {
        state[at] = Done;
        stack.pop_back();
        continue;
      }
      const TreeNodeSpec& n = s.nodes[at];
      const int b = branch++;
      if (n.next_is_leaf[b]) continue;
      const auto to = static_cast<size_t>(n.next[b]);
      if (state[to] == OnPath) fail(node, "tree nodes form a cycle through node " + str(static_cast<int64_t>(to)));
      if (state[to] == Unseen) {
        state[to] = OnPath;
        stack.push_back({to, 0});
      }
    }
  }
}

}  // namespace

TreeEnsembleSpec tree_ensemble_spec(const Node& node, DType x_dtype) {
  TreeEnsembleSpec s;
  const std::vector<double> splits = tensor_values(node, "nodes_splits", true);
  const std::vector<double> modes = tensor_values(node, "nodes_modes", true);
  const auto features = required_ints(node, "nodes_featureids");
  const auto true_ids = required_ints(node, "nodes_truenodeids");
  const auto false_ids = required_ints(node, "nodes_falsenodeids");
  const auto true_leafs = required_ints(node, "nodes_trueleafs");
  const auto false_leafs = required_ints(node, "nodes_falseleafs");
  const auto missing = node.attr_ints("nodes_missing_value_tracks_true");
  const size_t count = splits.size();
  require_length(node, "nodes_modes", modes.size(), count, "nodes_splits");
  require_length(node, "nodes_featureids", features.size(), count, "nodes_splits");
  require_length(node, "nodes_truenodeids", true_ids.size(), count, "nodes_splits");
  require_length(node, "nodes_falsenodeids", false_ids.size(), count, "nodes_splits");
  require_length(node, "nodes_trueleafs", true_leafs.size(), count, "nodes_splits");
  require_length(node, "nodes_falseleafs", false_leafs.size(), count, "nodes_splits");
  if (!missing.empty()) require_length(node, "nodes_missing_value_tracks_true", missing.size(), count, "nodes_splits");

  s.leaf_targets = required_ints(node, "leaf_targetids");
  s.leaf_weights = tensor_values(node, "leaf_weights", true);
  require_length(node, "leaf_weights", s.leaf_weights.size(), s.leaf_targets.size(), "leaf_targetids");
  s.roots = required_ints(node, "tree_roots");
  if (s.roots.empty()) fail(node, "attribute 'tree_roots' is empty: the ensemble has no tree");

  const int64_t aggregate = node.attr_int("aggregate_function", 1);
  if (aggregate < 0 || aggregate > 3) fail(node, "aggregate_function " + str(aggregate) + " is not 0 to 3");
  s.aggregate = static_cast<TreeAggregate>(aggregate);
  const int64_t post = node.attr_int("post_transform", 0);
  if (post < 0 || post > 4) fail(node, "post_transform " + str(post) + " is not 0 to 4");
  s.post_transform = static_cast<TreePostTransform>(post);

  int64_t max_target = -1;
  for (int64_t t : s.leaf_targets) max_target = std::max(max_target, t);
  s.n_targets = node.has_attr("n_targets") ? node.attr_int("n_targets", 0) : max_target + 1;
  if (s.n_targets < 1 || s.n_targets > kMaxTargets)
    fail(node, "n_targets " + str(s.n_targets) + " is not 1 to " + str(kMaxTargets));
  for (size_t i = 0; i < s.leaf_targets.size(); ++i)
    if (s.leaf_targets[i] < 0 || s.leaf_targets[i] >= s.n_targets)
      fail(node, "leaf_targetids[" + str(static_cast<int64_t>(i)) + "] = " + str(s.leaf_targets[i]) +
                     " is out of range [0, " + str(s.n_targets) + ")");

  const auto n_nodes = static_cast<int64_t>(count), n_leaves = static_cast<int64_t>(s.leaf_targets.size());
  for (int64_t r : s.roots)
    if (r < 0 || r >= n_nodes) fail(node, "tree root " + str(r) + " is out of range [0, " + str(n_nodes) + ")");
  s.nodes.resize(count);
  for (size_t i = 0; i < count; ++i) {
    TreeNodeSpec& n = s.nodes[i];
    const std::string at = "node " + str(static_cast<int64_t>(i));
    if (!(modes[i] >= 0 && modes[i] <= 6) || modes[i] != std::floor(modes[i]))
      fail(node, at + " has mode " + std::to_string(modes[i]) + ", not 0 (BRANCH_LEQ) to 6 (BRANCH_MEMBER)");
    n.mode = static_cast<TreeBranch>(static_cast<int>(modes[i]));
    n.feature = features[i];
    if (n.feature < 0) fail(node, at + " reads feature " + str(n.feature) + ", which is negative");
    s.max_feature = std::max(s.max_feature, n.feature);
    n.split = at_precision(splits[i], x_dtype);
    n.missing_goes_true = !missing.empty() && flag(node, "nodes_missing_value_tracks_true", missing[i]);
    n.next[0] = false_ids[i];
    n.next[1] = true_ids[i];
    n.next_is_leaf[0] = flag(node, "nodes_falseleafs", false_leafs[i]);
    n.next_is_leaf[1] = flag(node, "nodes_trueleafs", true_leafs[i]);
    for (int b = 0; b < 2; ++b) {
      const int64_t limit = n.next_is_leaf[b] ? n_leaves : n_nodes;
      if (n.next[b] < 0 || n.next[b] >= limit)
        fail(node, at + "'s " + (b ? "true" : "false") + " branch points at " + (n.next_is_leaf[b] ? "leaf " : "node ") +
                       str(n.next[b]) + ", out of range [0, " + str(limit) + ")");
    }
  }
  read_member_sets(node, s, x_dtype);
  reject_cycles(node, s);
  return s;
}

bool tree_branch_true(const TreeNodeSpec& n, double x) {
  if (std::isnan(x) && n.missing_goes_true) return true;
  switch (n.mode) {
    case TreeBranch::Leq: return x <= n.split;
    case TreeBranch::Lt: return x < n.split;
    case TreeBranch::Gte: return x >= n.split;
    case TreeBranch::Gt: return x > n.split;
    case TreeBranch::Eq: return x == n.split;
    case TreeBranch::Neq: return x != n.split;
    case TreeBranch::Member: return !std::isnan(x) && std::binary_search(n.members.begin(), n.members.end(), x);
  }
  return false;
}

}  // namespace fusor
