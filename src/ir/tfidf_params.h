// TfIdfVectorizer attributes, read and checked in one place for the shape function and the
// reference kernel: the pool of n-grams by length, where each one counts in the output, and
// how counts become weights. Integer pools only (pool_strings is not supported).
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "ir/graph.h"

namespace fusor {

enum class TfIdfMode { TF, IDF, TFIDF };

struct TfIdfSpec {
  TfIdfMode mode = TfIdfMode::TF;
  int64_t min_gram = 1, max_gram = 1;
  int64_t max_skip = 0;
  int64_t output_size = 0;     // columns: the largest of ngram_indexes, plus one
  std::vector<float> weights;  // by output column; empty: every weight is 1
  // grams[n - 1]: the pool's n-grams of length n -> their output column; only lengths in
  // [min_gram, max_gram] are filled.
  std::vector<std::map<std::vector<int64_t>, int64_t>> grams;
};

// Throws naming `node` on an unknown mode, gram lengths out of order, ngram_counts that do not
// split the pool into whole n-grams, ngram_indexes of the wrong length or out of range, or
// weights that do not cover every column; UnsupportedOp for a string pool.
TfIdfSpec tfidf_spec(const Node& node);

}  // namespace fusor
