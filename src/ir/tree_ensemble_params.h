// TreeEnsemble (ai.onnx.ml opset 5) attributes, read and checked in one place: the shape function
// rejects a malformed ensemble when the plan is built, and the reference kernel walks the same
// checked arrays, so a walk never leaves them or loops.
#pragma once
#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace fusor {

// ONNX's encodings of nodes_modes, aggregate_function and post_transform.
enum class TreeBranch : uint8_t { Leq, Lt, Gte, Gt, Eq, Neq, Member };
enum class TreeAggregate : uint8_t { Average, Sum, Min, Max };
enum class TreePostTransform : uint8_t { None, Softmax, Logistic, SoftmaxZero, Probit };

struct TreeNodeSpec {
  TreeBranch mode = TreeBranch::Leq;
  int64_t feature = 0;
  double split = 0;                // unused by Member
  bool missing_goes_true = false;  // where a NaN feature goes
  int64_t next[2] = {0, 0};        // [false branch, true branch]: a node or a leaf index
  bool next_is_leaf[2] = {false, false};
  std::vector<double> members;     // Member only: sorted set of values
};

struct TreeEnsembleSpec {
  std::vector<TreeNodeSpec> nodes;
  std::vector<int64_t> leaf_targets;
  std::vector<double> leaf_weights;
  std::vector<int64_t> roots;
  int64_t n_targets = 0;
  TreeAggregate aggregate = TreeAggregate::Sum;
  TreePostTransform post_transform = TreePostTransform::None;
  int64_t max_feature = -1;  // the largest feature id a node reads
};

// Reads the node's attributes; splits and set members are rounded to `x_dtype` (the input's
// type) so that comparisons happen at its precision. Throws naming `node` on arrays of
// mismatched lengths, ids out of range, unknown modes, membership sets that do not match the
// Member nodes, or node links that form a cycle.
TreeEnsembleSpec tree_ensemble_spec(const Node& node, DType x_dtype);

// Whether a row's feature value `x` takes the node's true branch.
bool tree_branch_true(const TreeNodeSpec& n, double x);

}  // namespace fusor
