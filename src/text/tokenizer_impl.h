// What a loaded tokenizer.json becomes: the pipeline's parts and the id tables decoding needs.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fusor/tokenizer.h"
#include "text/added_tokens.h"
#include "text/bpe.h"
#include "text/pre_tokenizer.h"

namespace fusor {

struct Tokenizer::Impl {
  Impl(text::Bpe bpe, text::PreTokenizer pre, text::AddedTokens added)
      : bpe(std::move(bpe)), pre(std::move(pre)), added(std::move(added)) {}

  // Reads tokenizer.json (tokenizer_json.cc); `origin` starts every error message.
  static std::shared_ptr<const Impl> parse(std::string_view json_text, const std::string& origin);

  text::Bpe bpe;
  text::PreTokenizer pre;
  text::AddedTokens added;
  // The post-processor's template for one sequence: these ids around it.
  std::vector<TokenId> template_prefix, template_suffix;

  // Indexed by id, vocab_size() long: the token, whether the id has one, whether it is special,
  // and the bytes the ByteLevel decoder makes of it.
  std::vector<std::string> token_of, bytes_of;
  std::vector<bool> known, special;
  std::unordered_map<std::string, TokenId> added_ids;

  // The bytes of `id`; InvalidArgument when no token has it.
  const std::string& bytes(TokenId id) const;
};

}  // namespace fusor
