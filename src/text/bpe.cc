#include "text/bpe.h"

#include <cstdio>
#include <queue>

#include "fusor/error.h"
#include "text/utf8.h"

namespace fusor::text {

Bpe::Bpe(std::unordered_map<std::string, TokenId> vocab, const std::vector<std::pair<std::string, std::string>>& merges,
         BpeOptions options)
    : vocab_(std::move(vocab)), options_(std::move(options)) {
  auto id_of = [&](const std::string& token, size_t line) {
    auto it = vocab_.find(token);
    if (it == vocab_.end())
      throw Error("merge " + std::to_string(line) + " (\"" + merges[line - 1].first + " " + merges[line - 1].second +
                      "\") needs \"" + token + "\", which is not in the vocab",
                  ErrorKind::InvalidModel);
    return it->second;
  };
  const std::string& prefix = options_.continuing_subword_prefix;
  for (size_t i = 0; i < merges.size(); ++i) {
    const auto& [a, b] = merges[i];
    std::string_view b_rest = b;
    if (!prefix.empty() && b_rest.starts_with(prefix)) b_rest.remove_prefix(prefix.size());
    TokenId ia = id_of(a, i + 1), ib = id_of(b, i + 1), merged = id_of(a + std::string(b_rest), i + 1);
    merges_[key(ia, ib)] = {static_cast<uint32_t>(i), merged};  // a repeated pair takes its last rank
  }
  if (options_.unk_token) {
    auto it = vocab_.find(*options_.unk_token);
    if (it == vocab_.end())
      throw Error("unk_token \"" + *options_.unk_token + "\" is not in the vocab", ErrorKind::InvalidModel);
    unk_id_ = it->second;
  }
}

const Bpe::Merge* Bpe::find_merge(TokenId a, TokenId b) const {
  auto it = merges_.find(key(a, b));
  return it == merges_.end() ? nullptr : &it->second;
}

std::vector<TokenId> Bpe::initial_symbols(std::string_view word) const {
  std::vector<TokenId> ids;
  bool unk_pending = false;  // an unknown run not yet written (fuse_unk joins runs)
  auto flush_unk = [&] {
    if (unk_pending) ids.push_back(*unk_id_), unk_pending = false;
  };
  for (size_t i = 0; i < word.size();) {
    size_t len = std::min(utf8_char_length(static_cast<unsigned char>(word[i])), word.size() - i);
    std::string symbol(word.substr(i, len));
    if (i > 0) symbol = options_.continuing_subword_prefix + symbol;
    i += len;
    if (i == word.size()) symbol += options_.end_of_word_suffix;
    if (auto it = vocab_.find(symbol); it != vocab_.end()) {
      flush_unk();
      ids.push_back(it->second);
      continue;
    }
    if (options_.byte_fallback) {
      std::vector<TokenId> bytes;
      for (unsigned char c : symbol) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", c);
        auto it = vocab_.find(name);
        if (it == vocab_.end()) break;
        bytes.push_back(it->second);
      }
      if (bytes.size() == symbol.size()) {  // Hugging Face writes these before a pending unk
        ids.insert(ids.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    if (unk_id_) {
      if (!options_.fuse_unk) flush_unk();
      unk_pending = true;
    }
  }
  flush_unk();
  return ids;
}

void Bpe::tokenize(std::string_view word, std::vector<TokenId>& out) const {
  if (word.empty()) return;
  if (options_.ignore_merges) {
    if (auto it = vocab_.find(std::string(word)); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  // Symbols form a linked list; a merged-away symbol is marked dead. The queue holds candidate
  // merges by (rank, position); an entry whose pair has changed since is skipped when popped.
  struct Symbol {
    TokenId id;
    int prev, next;
    bool alive;
  };
  std::vector<TokenId> ids = initial_symbols(word);
  std::vector<Symbol> s(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) s[i] = {ids[i], int(i) - 1, i + 1 < ids.size() ? int(i) + 1 : -1, true};
  struct Candidate {
    uint32_t rank;
    int pos;
    TokenId merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue;
  auto offer = [&](int left) {
    if (left < 0 || s[left].next < 0) return;
    if (const Merge* m = find_merge(s[left].id, s[s[left].next].id)) queue.push({m->rank, left, m->merged});
  };
  for (int i = 0; i + 1 < int(s.size()); ++i) offer(i);
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& left = s[top.pos];
    if (!left.alive || left.next < 0) continue;
    const Merge* m = find_merge(left.id, s[left.next].id);
    if (!m || m->merged != top.merged) continue;  // stale: this pair has changed since
    Symbol& right = s[left.next];
    right.alive = false;
    left.id = top.merged;
    left.next = right.next;
    if (right.next >= 0) s[right.next].prev = top.pos;
    offer(left.prev);
    offer(top.pos);
  }
  for (const Symbol& sym : s)
    if (sym.alive) out.push_back(sym.id);
}

}  // namespace fusor::text
