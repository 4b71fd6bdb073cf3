#include "fusor/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fusor/error.h"
#include "text/tokenizer_impl.h"
#include "text/utf8.h"

namespace fusor {

Tokenizer Tokenizer::load(const std::string& path) {
  std::filesystem::path file = path;
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) file /= "tokenizer.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error("cannot read " + file.string(), ErrorKind::InvalidArgument);
  std::ostringstream text;
  text << in.rdbuf();
  return from_json(text.str(), file.string());
}

Tokenizer Tokenizer::from_json(std::string_view json_text, const std::string& origin) {
  return Tokenizer(Impl::parse(json_text, origin));
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  if (!text::is_valid_utf8(text)) throw Error("text to encode is not valid UTF-8", ErrorKind::InvalidArgument);
  std::vector<TokenId> ids;
  if (add_special_tokens) ids = impl_->template_prefix;
  for (const text::TextSegment& segment : impl_->added.split(text)) {
    if (segment.token) ids.push_back(*segment.token);
    else
      for (const std::string& word : impl_->pre.words(segment.text)) impl_->bpe.tokenize(word, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), impl_->template_suffix.begin(), impl_->template_suffix.end());
  return ids;
}

const std::string& Tokenizer::Impl::bytes(TokenId id) const {
  if (id < 0 || size_t(id) >= known.size() || !known[id])
    throw Error("token id " + std::to_string(id) + " is not in the vocabulary (" + std::to_string(known.size()) +
                    " ids)",
                ErrorKind::InvalidArgument);
  return bytes_of[id];
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  std::string bytes;
  for (TokenId id : ids) {
    const std::string& b = impl_->bytes(id);
    if (!(skip_special_tokens && impl_->special[id])) bytes += b;
  }
  return text::lossy_utf8(bytes);
}

Tokenizer::StreamDecoder Tokenizer::stream_decoder(bool skip_special_tokens) const {
  return StreamDecoder(impl_, skip_special_tokens);
}

std::string Tokenizer::StreamDecoder::push(TokenId id) {
  // A model's logits may be wider than its tokenizer (Phi-3 has 32064 for 32011 ids, Qwen2
  // pads too): an id the vocabulary lacks adds no text, as Hugging Face's decode skips it,
  // where it ended the generation with an error.
  if (id >= 0 && (size_t(id) >= impl_->known.size() || !impl_->known[id])) return {};
  const std::string& b = impl_->bytes(id);
  if (skip_special_ && impl_->special[id]) return {};
  pending_ += b;
  size_t settled = text::settled_utf8_prefix(pending_);
  std::string out = text::lossy_utf8(std::string_view(pending_).substr(0, settled));
  pending_.erase(0, settled);
  return out;
}

std::string Tokenizer::StreamDecoder::finish() {
  std::string out = text::lossy_utf8(pending_);
  pending_.clear();
  return out;
}

std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  std::string key(token);
  if (auto it = impl_->added_ids.find(key); it != impl_->added_ids.end()) return it->second;
  if (auto it = impl_->bpe.vocab().find(key); it != impl_->bpe.vocab().end()) return it->second;
  return std::nullopt;
}

std::string Tokenizer::id_to_token(TokenId id) const {
  impl_->bytes(id);  // checks the id
  return impl_->token_of[id];
}

size_t Tokenizer::vocab_size() const { return impl_->known.size(); }

bool Tokenizer::is_special(TokenId id) const {
  return id >= 0 && size_t(id) < impl_->special.size() && impl_->special[id];
}

}  // namespace fusor
