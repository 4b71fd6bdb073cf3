// The BPE model: a word (already in byte-level form) becomes its characters' ids, then the
// adjacent pair with the lowest merge rank is merged, leftmost first, until no pair has a merge.
// Merging one pair at a time in (rank, position) order is what Hugging Face does, so ids agree
// even for merge lists where merging every occurrence of a pair at once would not.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fusor/tokenizer.h"

namespace fusor::text {

struct BpeOptions {
  std::optional<std::string> unk_token;  // for a character the vocabulary lacks; else it is dropped
  bool fuse_unk = false;                 // consecutive unknown characters make one unk
  bool byte_fallback = false;            // an unknown character becomes its "<0xAB>" byte tokens
  std::string continuing_subword_prefix, end_of_word_suffix;
  bool ignore_merges = false;            // a whole word in the vocabulary is one token
};

class Bpe {
 public:
  // Throws fusor::Error (InvalidModel) for a merge whose parts or result are not in `vocab`,
  // or an unk_token that is not, naming the merge by its 1-based line.
  Bpe(std::unordered_map<std::string, TokenId> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options);

  // Appends the ids of one word.
  void tokenize(std::string_view word, std::vector<TokenId>& out) const;

  const std::unordered_map<std::string, TokenId>& vocab() const { return vocab_; }

 private:
  struct Merge {
    uint32_t rank;
    TokenId merged;
  };
  static uint64_t key(TokenId a, TokenId b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  const Merge* find_merge(TokenId a, TokenId b) const;
  std::vector<TokenId> initial_symbols(std::string_view word) const;

  std::unordered_map<std::string, TokenId> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
  std::optional<TokenId> unk_id_;
};

}  // namespace fusor::text
