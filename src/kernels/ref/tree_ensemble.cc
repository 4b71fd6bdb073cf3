// TreeEnsemble (ai.onnx.ml opset 5): each row of X walks every tree from its root to a leaf; the
// leaves' weights are aggregated per target (sum, average over the trees, min or max), then
// the row's scores are post-transformed.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "ir/tree_ensemble_params.h"
#include "kernels/ref/dispatch.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

// The leaf a row reaches from `root`; the spec guarantees links in range and no cycle.
int64_t reach_leaf(const TreeEnsembleSpec& s, int64_t root, const double* row) {
  int64_t at = root;
  for (;;) {
    const TreeNodeSpec& n = s.nodes[static_cast<size_t>(at)];
    const int b = tree_branch_true(n, row[n.feature]) ? 1 : 0;
    if (n.next_is_leaf[b]) return n.next[b];
    at = n.next[b];
  }
}

// erf's inverse on (-1, 1) by bisection: plain, and exact to double precision.
double erf_inverse(double z) {
  if (std::isnan(z) || z < -1 || z > 1) return std::numeric_limits<double>::quiet_NaN();
  if (z == 1 || z == -1) return z * std::numeric_limits<double>::infinity();
  double lo = -6, hi = 6;  // erf(6) is 1 in double
  for (int i = 0; i < 100 && lo < hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (std::erf(mid) < z ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

void post_transform(TreePostTransform t, std::vector<double>& v) {
  switch (t) {
    case TreePostTransform::None: return;
    case TreePostTransform::Logistic:
      for (double& x : v) x = 1 / (1 + std::exp(-x));
      return;
    case TreePostTransform::Probit:
      for (double& x : v) x = std::numbers::sqrt2 * erf_inverse(2 * x - 1);
      return;
    case TreePostTransform::Softmax:
    case TreePostTransform::SoftmaxZero: {
      // SoftmaxZero keeps zero scores at zero and normalises over the others.
      const bool keep_zeros = t == TreePostTransform::SoftmaxZero;
      double top = -std::numeric_limits<double>::infinity(), sum = 0;
      for (double x : v)
        if (!(keep_zeros && x == 0)) top = std::max(top, x);
      for (double& x : v) {
        x = keep_zeros && x == 0 ? 0 : std::exp(x - top);
        sum += x;
      }
      if (sum > 0)
        for (double& x : v) x /= sum;
      return;
    }
  }
}

}  // namespace

void TreeEnsemble(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const Tensor& x = inputs[0];
  const TreeEnsembleSpec s = tree_ensemble_spec(node, x.dtype());
  const int64_t rows = x.dim(0), features = x.dim(1);
  if (s.max_feature >= features)
    fail(node, "a tree node reads feature " + std::to_string(s.max_feature) + " but X has " + std::to_string(features));
  visit_float(x.dtype(), node, [&](auto* tag) {
    using T = elem_t<decltype(tag)>;
    const T* px = x.data<T>();
    T* py = outputs[0].data<T>();
    // MIN and MAX start from the type's extremes, so a target no leaf reaches keeps one.
    const double start = s.aggregate == TreeAggregate::Min   ? static_cast<double>(std::numeric_limits<T>::max())
                         : s.aggregate == TreeAggregate::Max ? static_cast<double>(std::numeric_limits<T>::lowest())
                                                             : 0.0;
    std::vector<double> row(static_cast<size_t>(features)), scores(static_cast<size_t>(s.n_targets));
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t f = 0; f < features; ++f) row[static_cast<size_t>(f)] = static_cast<double>(px[r * features + f]);
      std::fill(scores.begin(), scores.end(), start);
      for (int64_t root : s.roots) {
        const auto leaf = static_cast<size_t>(reach_leaf(s, root, row.data()));
        double& score = scores[static_cast<size_t>(s.leaf_targets[leaf])];
        const double w = s.leaf_weights[leaf];
        switch (s.aggregate) {
          case TreeAggregate::Sum: case TreeAggregate::Average: score += w; break;
          case TreeAggregate::Min: score = std::min(score, w); break;
          case TreeAggregate::Max: score = std::max(score, w); break;
        }
      }
      if (s.aggregate == TreeAggregate::Average)
        for (double& v : scores) v /= static_cast<double>(s.roots.size());
      post_transform(s.post_transform, scores);
      for (int64_t t = 0; t < s.n_targets; ++t) py[r * s.n_targets + t] = static_cast<T>(scores[static_cast<size_t>(t)]);
    }
  });
}

}  // namespace fusor::ref
