#include "ir/tfidf_params.h"

#include <algorithm>
#include <string>

#include "ir/shape_util.h"

namespace fusor {
namespace {

// Output columns per row: bound them before anything is allocated.
constexpr int64_t kMaxColumns = int64_t{1} << 24;

std::string str(int64_t v) { return std::to_string(v); }

int64_t required_int(const Node& node, const char* name) {
  if (!node.has_attr(name)) fail(node, std::string("missing required attribute '") + name + "'");
  return node.attr_int(name, 0);
}

}  // namespace

TfIdfSpec tfidf_spec(const Node& node) {
  TfIdfSpec s;
  const std::string mode = node.attr_string("mode", "");
  if (mode == "TF") s.mode = TfIdfMode::TF;
  else if (mode == "IDF") s.mode = TfIdfMode::IDF;
  else if (mode == "TFIDF") s.mode = TfIdfMode::TFIDF;
  else fail(node, "mode must be 'TF', 'IDF' or 'TFIDF', got '" + mode + "'");
  s.min_gram = required_int(node, "min_gram_length");
  s.max_gram = required_int(node, "max_gram_length");
  s.max_skip = required_int(node, "max_skip_count");
  if (s.min_gram < 1 || s.max_gram < s.min_gram)
    fail(node, "gram lengths must satisfy 1 <= min_gram_length <= max_gram_length, got " + str(s.min_gram) + " and " +
                   str(s.max_gram));
  if (s.max_skip < 0) fail(node, "max_skip_count " + str(s.max_skip) + " is negative");
  if (node.has_attr("pool_strings"))
    fail(node, "string pools (pool_strings) are not supported, only pool_int64s", ErrorKind::UnsupportedOp);
  const std::vector<int64_t> pool = node.attr_ints("pool_int64s");
  if (pool.empty()) fail(node, "attribute 'pool_int64s' is missing or empty");
  if (!node.has_attr("ngram_counts")) fail(node, "missing required attribute 'ngram_counts'");
  const std::vector<int64_t> counts = node.attr_ints("ngram_counts");
  const std::vector<int64_t> indexes = node.attr_ints("ngram_indexes");
  const auto pool_size = static_cast<int64_t>(pool.size());

  // Level i of the pool holds n-grams of length i + 1, from counts[i] to the next level's start.
  int64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    if (begin < 0 || begin > end || end > pool_size)
      fail(node, "ngram_counts must rise from 0 to at most the pool size " + str(pool_size) + ", got " + str(begin) +
                     " then " + str(end));
    const auto n = static_cast<int64_t>(i) + 1;
    if ((end - begin) % n != 0)
      fail(node, "the pool's " + str(end - begin) + " items of " + str(n) + "-grams are not whole " + str(n) + "-grams");
    total += (end - begin) / n;
  }
  if (static_cast<int64_t>(indexes.size()) != total)
    fail(node, "ngram_indexes has " + str(static_cast<int64_t>(indexes.size())) + " entries for the pool's " +
                   str(total) + " n-grams");
  for (int64_t c : indexes) {
    if (c < 0 || c >= kMaxColumns) fail(node, "ngram_indexes holds " + str(c) + ", out of range [0, " + str(kMaxColumns) + ")");
    s.output_size = std::max(s.output_size, c + 1);
  }
  s.weights = node.attr_floats("weights");
  if (!s.weights.empty() && (s.weights.size() != indexes.size() || static_cast<int64_t>(s.weights.size()) < s.output_size))
    fail(node, "weights has " + str(static_cast<int64_t>(s.weights.size())) + " entries, expected one per n-gram (" +
                   str(total) + ") covering all " + str(s.output_size) + " output columns");

  s.grams.resize(static_cast<size_t>(std::min<int64_t>(s.max_gram, static_cast<int64_t>(counts.size()))));
  size_t gram = 0;  // the pool's n-gram number, across levels: its column is indexes[gram]
  for (size_t i = 0; i < counts.size(); ++i) {
    const auto n = static_cast<int64_t>(i) + 1;
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : pool_size;
    for (int64_t at = begin; at < end; at += n, ++gram) {
      if (n < s.min_gram || n > s.max_gram) continue;
      std::vector<int64_t> key(pool.begin() + at, pool.begin() + at + n);
      s.grams[i][std::move(key)] = indexes[gram];  // a repeated n-gram counts in its last column
    }
  }
  return s;
}

}  // namespace fusor
