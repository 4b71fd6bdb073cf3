// TfIdfVectorizer: counts, per row of X, how often each n-gram of the pool occurs, its items
// taken at a fixed distance (1 + skip, skip up to max_skip_count) apart, then weighs the counts.
// A unigram counts once per position, whatever the skip.
#include <algorithm>
#include <vector>

#include "ir/graph.h"
#include "ir/shape_util.h"
#include "ir/tfidf_params.h"
#include "kernels/ref/reference.h"

namespace fusor::ref {
namespace {

void count_row(const TfIdfSpec& s, const int64_t* x, int64_t width, float* counts) {
  std::vector<int64_t> key;
  for (int64_t n = s.min_gram; n <= static_cast<int64_t>(s.grams.size()); ++n) {
    const auto& grams = s.grams[static_cast<size_t>(n - 1)];
    if (grams.empty()) continue;
    // Distances past the row's width cannot fit a second item: bound the skips by it.
    const int64_t max_distance = n == 1 ? 1 : std::min(s.max_skip, width) + 1;
    for (int64_t d = 1; d <= max_distance; ++d) {
      for (int64_t start = 0; start + (n - 1) * d < width; ++start) {
        key.clear();
        for (int64_t k = 0; k < n; ++k) key.push_back(x[start + k * d]);
        if (auto it = grams.find(key); it != grams.end()) counts[it->second] += 1;
      }
    }
  }
}

}  // namespace

void TfIdfVectorizer(const Node& node, std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  const TfIdfSpec s = tfidf_spec(node);
  const Tensor& x = inputs[0];
  Tensor& y = outputs[0];
  const std::vector<int64_t> items = x.to_int64_vector();
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1, width = x.rank() == 2 ? x.dim(1) : x.numel();
  if (y.numel() != rows * s.output_size) fail(node, "output does not have " + std::to_string(rows * s.output_size) + " elements");
  float* out = y.data<float>();
  std::fill(out, out + y.numel(), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = out + r * s.output_size;
    count_row(s, items.data() + r * width, width, row);
    for (int64_t c = 0; c < s.output_size; ++c) {
      const float w = s.weights.empty() ? 1.0f : s.weights[static_cast<size_t>(c)];
      if (s.mode == TfIdfMode::IDF) row[c] = row[c] > 0 ? w : 0.0f;
      else if (s.mode == TfIdfMode::TFIDF) row[c] *= w;
    }
  }
}

}  // namespace fusor::ref
