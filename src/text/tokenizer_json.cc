// Reads Hugging Face's tokenizer.json into Tokenizer::Impl. Every problem is one fusor::Error
// line naming the file and the JSON path: InvalidModel for a malformed file, UnsupportedOp for a
// well-formed one that needs a part fusor does not implement.
#include <nlohmann/json.hpp>

#include "fusor/error.h"
#include "io/json_depth.h"
#include "text/byte_level.h"
#include "text/tokenizer_impl.h"

namespace fusor {
namespace {

using nlohmann::json;

// Ids above this are refused: the id tables are dense, and a real vocabulary is far smaller.
constexpr int64_t kMaxId = int64_t(1) << 24;

struct Reader {
  const std::string& origin;

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw Error(origin + ": " + where + ": " + what, ErrorKind::InvalidModel);
  }
  [[noreturn]] void unsupported(const std::string& where, const std::string& what) const {
    throw Error(origin + ": " + where + ": " + what, ErrorKind::UnsupportedOp);
  }
  const json& field(const json& obj, const std::string& key, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, "missing \"" + key + "\"");
    return *it;
  }
  const json& object(const json& j, const std::string& where) const {
    if (!j.is_object()) fail(where, "is not an object");
    return j;
  }
  std::string string(const json& j, const std::string& where) const {
    if (!j.is_string()) fail(where, "is not a string");
    return j.get<std::string>();
  }
  bool boolean(const json& obj, const std::string& key, bool fallback, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) fail(where + "." + key, "is not true or false");
    return it->get<bool>();
  }
  std::string optional_string(const json& obj, const std::string& key, const std::string& where) const {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? std::string() : string(*it, where + "." + key);
  }
  TokenId id(const json& j, const std::string& where) const {
    if (!j.is_number_integer() || j.get<int64_t>() < 0 || j.get<int64_t>() >= kMaxId)
      fail(where, "is not a token id in [0, " + std::to_string(kMaxId) + ")");
    return static_cast<TokenId>(j.get<int64_t>());
  }
  std::string type(const json& j, const std::string& where) const {
    return string(field(object(j, where), "type", where), where + ".type");
  }
};

text::Bpe read_bpe(const Reader& r, const json& model) {
  std::string type = r.type(model, "model");
  if (type != "BPE")
    r.unsupported("model", "type \"" + type + "\" is not supported (fusor reads BPE tokenizers only)");
  if (auto it = model.find("dropout"); it != model.end() && !it->is_null())
    r.unsupported("model.dropout", "BPE dropout samples at random; fusor encodes deterministically only");
  const json& vocab_json = r.field(model, "vocab", "model");
  if (!vocab_json.is_object()) r.fail("model.vocab", "is not an object of token -> id");
  std::unordered_map<std::string, TokenId> vocab;
  std::unordered_map<TokenId, std::string> seen;
  for (const auto& [token, id] : vocab_json.items()) {
    TokenId i = r.id(id, "model.vocab[\"" + token + "\"]");
    if (auto [it, fresh] = seen.emplace(i, token); !fresh)
      r.fail("model.vocab",
             "id " + std::to_string(i) + " is given to both \"" + it->second + "\" and \"" + token + "\"");
    vocab.emplace(token, i);
  }
  const json& merges_json = r.field(model, "merges", "model");
  if (!merges_json.is_array()) r.fail("model.merges", "is not an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const json& m = merges_json[i];
    std::string where = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {  // "a b": byte-level tokens hold no literal space
      std::string s = m.get<std::string>();
      size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos)
        r.fail(where, "\"" + s + "\" is not two tokens separated by one space");
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      r.fail(where, "is neither \"a b\" nor [\"a\", \"b\"]");
    }
  }
  text::BpeOptions options;
  if (std::string unk = r.optional_string(model, "unk_token", "model"); !unk.empty()) options.unk_token = unk;
  options.fuse_unk = r.boolean(model, "fuse_unk", false, "model");
  options.byte_fallback = r.boolean(model, "byte_fallback", false, "model");
  options.ignore_merges = r.boolean(model, "ignore_merges", false, "model");
  options.continuing_subword_prefix = r.optional_string(model, "continuing_subword_prefix", "model");
  options.end_of_word_suffix = r.optional_string(model, "end_of_word_suffix", "model");
  try {
    return text::Bpe(std::move(vocab), merges, std::move(options));
  } catch (const Error& e) {
    r.fail("model", e.what());
  }
}

text::SplitBehavior split_behavior(const Reader& r, const std::string& name, const std::string& where) {
  if (name == "Removed") return text::SplitBehavior::Removed;
  if (name == "Isolated") return text::SplitBehavior::Isolated;
  if (name == "MergedWithPrevious") return text::SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext") return text::SplitBehavior::MergedWithNext;
  if (name == "Contiguous") return text::SplitBehavior::Contiguous;
  r.fail(where, "unknown split behavior \"" + name + "\"");
}

void read_pre_tokenizer(const Reader& r, const json& j, const std::string& where,
                        std::vector<text::PreTokenizeStep>& steps) {
  if (j.is_null()) return;
  std::string type = r.type(j, where);
  text::PreTokenizeStep step;
  if (type == "Sequence") {
    const json& list = r.field(j, "pretokenizers", where);
    if (!list.is_array()) r.fail(where + ".pretokenizers", "is not an array");
    for (size_t i = 0; i < list.size(); ++i)
      read_pre_tokenizer(r, list[i], where + ".pretokenizers[" + std::to_string(i) + "]", steps);
    return;
  } else if (type == "ByteLevel") {
    step.kind = text::PreTokenizeStep::Kind::ByteLevel;
    step.add_prefix_space = r.boolean(j, "add_prefix_space", true, where);
    step.use_regex = r.boolean(j, "use_regex", true, where);
  } else if (type == "Split") {
    step.kind = text::PreTokenizeStep::Kind::Split;
    const json& pattern = r.object(r.field(j, "pattern", where), where + ".pattern");
    if (pattern.contains("Regex")) {
      try {
        step.regex = std::make_shared<const text::Regex>(r.string(pattern["Regex"], where + ".pattern.Regex"));
      } catch (const Error& e) {
        r.fail(where + ".pattern", e.what());
      }
    } else if (pattern.contains("String")) {
      step.literal = r.string(pattern["String"], where + ".pattern.String");
    } else {
      r.fail(where + ".pattern", "has neither \"Regex\" nor \"String\"");
    }
    std::string behavior = r.string(r.field(j, "behavior", where), where + ".behavior");
    step.behavior = split_behavior(r, behavior, where + ".behavior");
    step.invert = r.boolean(j, "invert", false, where);
  } else {
    r.unsupported(where, "type \"" + type + "\" is not supported (fusor reads ByteLevel, Split and Sequence)");
  }
  steps.push_back(std::move(step));
}

// A special token of the post-processor, by its content: its id must be a known token.
TokenId special_id(const Reader& r, const json& pair, const std::string& where) {
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string()) r.fail(where, "is not [\"token\", id]");
  return r.id(pair[1], where + "[1]");
}

// Sets the ids around one sequence; a Sequence of processors wraps each result in the next.
void read_post_processor(const Reader& r, const json& j, const std::string& where, std::vector<TokenId>& prefix,
                         std::vector<TokenId>& suffix) {
  if (j.is_null()) return;
  std::string type = r.type(j, where);
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    const json& list = r.field(j, "processors", where);
    if (!list.is_array()) r.fail(where + ".processors", "is not an array");
    for (size_t i = 0; i < list.size(); ++i)
      read_post_processor(r, list[i], where + ".processors[" + std::to_string(i) + "]", prefix, suffix);
    return;
  }
  std::vector<TokenId> before, after;
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    before.push_back(special_id(r, r.field(j, "cls", where), where + ".cls"));
    after.push_back(special_id(r, r.field(j, "sep", where), where + ".sep"));
  } else if (type == "TemplateProcessing") {
    const json& single = r.field(j, "single", where);
    const json& specials = r.object(r.field(j, "special_tokens", where), where + ".special_tokens");
    if (!single.is_array()) r.fail(where + ".single", "is not an array");
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
      std::string at = where + ".single[" + std::to_string(i) + "]";
      const json& piece = r.object(single[i], at);
      if (piece.contains("Sequence")) {
        std::string id = r.string(r.field(piece["Sequence"], "id", at + ".Sequence"), at + ".Sequence.id");
        if (id != "A" || seen_sequence) r.unsupported(at, "a single-sequence template holds sequence A once");
        seen_sequence = true;
      } else if (piece.contains("SpecialToken")) {
        std::string name =
            r.string(r.field(piece["SpecialToken"], "id", at + ".SpecialToken"), at + ".SpecialToken.id");
        auto it = specials.find(name);
        if (it == specials.end()) r.fail(at, "special token \"" + name + "\" is not in special_tokens");
        const json& ids = r.field(*it, "ids", where + ".special_tokens." + name);
        if (!ids.is_array()) r.fail(where + ".special_tokens." + name + ".ids", "is not an array");
        for (const json& id : ids)
          (seen_sequence ? after : before).push_back(r.id(id, where + ".special_tokens." + name));
      } else {
        r.fail(at, "is neither a Sequence nor a SpecialToken");
      }
    }
    if (!seen_sequence) r.fail(where + ".single", "has no sequence A");
  } else {
    r.unsupported(where, "type \"" + type + "\" is not supported");
  }
  prefix.insert(prefix.begin(), before.begin(), before.end());
  suffix.insert(suffix.end(), after.begin(), after.end());
}

void check_decoder(const Reader& r, const json& j) {
  if (j.is_null()) r.unsupported("decoder", "is missing (fusor decodes byte-level BPE with the ByteLevel decoder)");
  std::string type = r.type(j, "decoder");
  if (type == "Sequence") {
    const json& list = r.field(j, "decoders", "decoder");
    if (list.is_array() && list.size() == 1 && list[0].is_object() && list[0].value("type", "") == "ByteLevel") return;
    r.unsupported("decoder", "only a Sequence of one ByteLevel decoder is supported");
  }
  if (type != "ByteLevel")
    r.unsupported("decoder", "type \"" + type + "\" is not supported (fusor decodes byte-level BPE only)");
}

void check_normalizer(const Reader& r, const json& j) {
  if (j.is_null()) return;
  std::string type = r.type(j, "normalizer");
  if (type == "Sequence" && j.value("normalizers", json::array()).empty()) return;
  r.unsupported("normalizer", "type \"" + type + "\" is not supported (fusor reads tokenizers without a normalizer)");
}

std::vector<text::AddedToken> read_added_tokens(const Reader& r, const json& root) {
  std::vector<text::AddedToken> out;
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return out;
  if (!it->is_array()) r.fail("added_tokens", "is not an array");
  for (size_t i = 0; i < it->size(); ++i) {
    std::string where = "added_tokens[" + std::to_string(i) + "]";
    const json& t = r.object((*it)[i], where);
    text::AddedToken a;
    a.id = r.id(r.field(t, "id", where), where + ".id");
    a.content = r.string(r.field(t, "content", where), where + ".content");
    if (a.content.empty()) r.fail(where + ".content", "is empty");
    a.single_word = r.boolean(t, "single_word", false, where);
    a.lstrip = r.boolean(t, "lstrip", false, where);
    a.rstrip = r.boolean(t, "rstrip", false, where);
    a.special = r.boolean(t, "special", false, where);
    a.normalized = r.boolean(t, "normalized", !a.special, where);
    out.push_back(std::move(a));
  }
  return out;
}

}  // namespace

std::shared_ptr<const Tokenizer::Impl> Tokenizer::Impl::parse(std::string_view json_text, const std::string& origin) {
  Reader r{origin};
  json root;
  if (!json_depth_within(json_text)) r.fail("not valid JSON", "nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  try {
    root = json::parse(json_text);
  } catch (const json::exception& e) {
    r.fail("not valid JSON", e.what());
  }
  r.object(root, "the file");
  text::Bpe bpe = read_bpe(r, r.field(root, "model", "the file"));  // first: the model type says most
  check_normalizer(r, root.value("normalizer", json()));
  check_decoder(r, root.value("decoder", json()));
  std::vector<text::PreTokenizeStep> steps;
  read_pre_tokenizer(r, root.value("pre_tokenizer", json()), "pre_tokenizer", steps);
  std::vector<text::AddedToken> added = read_added_tokens(r, root);

  auto impl = std::make_shared<Impl>(std::move(bpe), text::PreTokenizer(std::move(steps)), text::AddedTokens(added));
  read_post_processor(r, root.value("post_processor", json()), "post_processor", impl->template_prefix,
                      impl->template_suffix);

  // Dense id tables over the vocab and the added tokens (an added token's id may reuse a vocab id).
  size_t size = 0;
  for (const auto& [token, id] : impl->bpe.vocab()) size = std::max(size, size_t(id) + 1);
  for (const text::AddedToken& a : added) size = std::max(size, size_t(a.id) + 1);
  if (size > 2 * (impl->bpe.vocab().size() + added.size()) + 4096)  // tables are dense: refuse a file of holes
    r.fail("the file", "ids run to " + std::to_string(size - 1) + " for only " +
                           std::to_string(impl->bpe.vocab().size() + added.size()) + " tokens");
  impl->token_of.assign(size, {});
  impl->known.assign(size, false);
  impl->special.assign(size, false);
  for (const auto& [token, id] : impl->bpe.vocab()) impl->token_of[id] = token, impl->known[id] = true;
  for (const text::AddedToken& a : added) {
    impl->token_of[a.id] = a.content, impl->known[a.id] = true, impl->special[a.id] = a.special;
    impl->added_ids[a.content] = a.id;
  }
  for (const auto* ids : {&impl->template_prefix, &impl->template_suffix})
    for (TokenId id : *ids)
      if (size_t(id) >= size || !impl->known[id])
        r.fail("post_processor", "special token id " + std::to_string(id) + " is not in the vocabulary");
  impl->bytes_of.resize(size);
  for (size_t id = 0; id < size; ++id) {  // a token with characters outside the byte alphabet keeps its own bytes
    auto bytes = text::from_byte_level(impl->token_of[id]);
    impl->bytes_of[id] = bytes ? std::move(*bytes) : impl->token_of[id];
  }
  return impl;
}

}  // namespace fusor
