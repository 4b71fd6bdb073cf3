// The tokenizer on small hand-written tokenizer.json files. Agreement with Hugging Face on real
// text is tests/e2e/test_tokenizer.py's job; here: merge order, every byte, added tokens,
// streaming, and one-line errors for broken files.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "fusor/error.h"
#include "fusor/tokenizer.h"

namespace fusor {
namespace {

using nlohmann::json;

// GPT-2's stand-in for byte b (its bytes_to_unicode), written out here from the published rule
// rather than taken from the code under test.
std::string stand_in(int b) {
  int code = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int c = 0; c < b; ++c)
      if (!((c >= 33 && c <= 126) || (c >= 161 && c <= 172) || (c >= 174 && c <= 255))) ++n;
    code = 256 + n;
  }
  std::string s;
  if (code < 0x80) s.push_back(char(code));
  else s += {char(0xC0 | (code >> 6)), char(0x80 | (code & 0x3F))};
  return s;
}

// Byte tokens take ids 0..255 (byte order); `merged` tokens follow from 256 in order.
json tokenizer_json(const std::vector<std::string>& merges, const std::vector<std::string>& merged) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[stand_in(b)] = b;
  for (size_t i = 0; i < merged.size(); ++i) vocab[merged[i]] = 256 + int(i);
  return {{"version", "1.0"},
          {"added_tokens", json::array()},
          {"normalizer", nullptr},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
          {"post_processor", {{"type", "ByteLevel"}, {"trim_offsets", true}}},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"vocab", vocab}, {"merges", merges}}}};
}

Tokenizer make(const json& j) { return Tokenizer::from_json(j.dump(), "test.json"); }

std::vector<TokenId> ids_of(const Tokenizer& t, const std::vector<std::string>& tokens) {
  std::vector<TokenId> ids;
  for (const auto& s : tokens) ids.push_back(t.token_to_id(s).value());
  return ids;
}

void expect_error(const json& j, const std::string& fragment, ErrorKind kind = ErrorKind::InvalidModel) {
  try {
    make(j);
    FAIL() << "accepted; expected: " << fragment;
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    EXPECT_EQ(e.kind(), kind) << message;
  }
}

TEST(Tokenizer, LowerRankedMergesApplyFirst) {
  Tokenizer el_first = make(tokenizer_json({"e l", "l l"}, {"el", "ll"}));
  EXPECT_EQ(el_first.encode("ell", false), ids_of(el_first, {"el", "l"}));
  Tokenizer ll_first = make(tokenizer_json({"l l", "e l"}, {"ll", "el"}));
  EXPECT_EQ(ll_first.encode("ell", false), ids_of(ll_first, {"e", "ll"}));
  // Merges chain into longer tokens; the regex keeps a leading space with its word.
  Tokenizer t = make(tokenizer_json({"l l", "h e", "he ll", "hell o", "Ġ hello"}, {"ll", "he", "hell", "hello", "Ġhello"}));
  EXPECT_EQ(t.encode("hello hello", false), ids_of(t, {"hello", "Ġhello"}));
  EXPECT_EQ(t.decode(t.encode("hello hello", false)), "hello hello");
  // Pairs of the same rank merge leftmost first: "lll" is "ll" + "l", not "l" + "ll".
  EXPECT_EQ(t.encode("lll", false), ids_of(t, {"ll", "l"}));
}

TEST(Tokenizer, IgnoreMergesUnkAndByteFallback) {
  json j = tokenizer_json({"h e"}, {"he", "hello"});
  Tokenizer merging = make(j);
  EXPECT_EQ(merging.encode("hello", false), ids_of(merging, {"he", "l", "l", "o"}));  // no merge path to "hello"
  j["model"]["ignore_merges"] = true;
  Tokenizer whole = make(j);
  EXPECT_EQ(whole.encode("hello", false), ids_of(whole, {"hello"}));

  // A vocabulary without byte symbols: unknown characters become unk (runs fused or not), or
  // their "<0xAB>" byte tokens when byte_fallback is on.
  json small = {{"decoder", {{"type", "ByteLevel"}}},
                {"model", {{"type", "BPE"}, {"unk_token", "<unk>"}, {"vocab", {{"<unk>", 0}, {"a", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}}},
                           {"merges", json::array()}}}};
  EXPECT_EQ(make(small).encode("axxa", false), (std::vector<TokenId>{1, 0, 0, 1}));
  small["model"]["fuse_unk"] = true;
  EXPECT_EQ(make(small).encode("axxa", false), (std::vector<TokenId>{1, 0, 1}));
  small["model"]["byte_fallback"] = true;
  EXPECT_EQ(make(small).encode("a\u00e9x", false), (std::vector<TokenId>{1, 2, 3, 0}));
  small["model"]["unk_token"] = "<missing>";
  expect_error(small, "unk_token \"<missing>\" is not in the vocab");
}

// A character whose UTF-8 form holds byte b, or "" for bytes that valid UTF-8 never holds.
std::string char_with_byte(int b) {
  auto s = [](std::initializer_list<int> bytes) {
    std::string out;
    for (int x : bytes) out.push_back(char(x));
    return out;
  };
  if (b < 0x80) return s({b});
  if (b < 0xC0) return s({0xC2, b});
  if (b < 0xC2) return "";
  if (b < 0xE0) return s({b, 0x80});
  if (b == 0xE0) return s({b, 0xA0, 0x80});
  if (b < 0xF0) return s({b, 0x80, 0x80});
  if (b == 0xF0) return s({b, 0x90, 0x80, 0x80});
  if (b <= 0xF4) return s({b, 0x80, 0x80, 0x80});
  return "";
}

TEST(Tokenizer, EveryByteHasAToken) {
  Tokenizer t = make(tokenizer_json({}, {}));
  EXPECT_EQ(t.vocab_size(), 256u);
  for (int b = 0; b < 256; ++b) {
    EXPECT_EQ(t.token_to_id(stand_in(b)), b);
    EXPECT_EQ(t.id_to_token(b), stand_in(b));
    std::string c = char_with_byte(b);
    if (c.empty()) {  // never in valid UTF-8: decodes to U+FFFD
      EXPECT_EQ(t.decode(std::vector<TokenId>{b}), "\xEF\xBF\xBD") << b;
      continue;
    }
    std::vector<TokenId> ids = t.encode(c, false);
    ASSERT_EQ(ids.size(), c.size()) << b;
    for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(ids[i], static_cast<unsigned char>(c[i])) << b;
    EXPECT_EQ(t.decode(ids), c) << b;
  }
}

TEST(Tokenizer, AddedTokensAreMatchedBeforePreTokenization) {
  json j = tokenizer_json({"h i"}, {"hi"});
  j["added_tokens"] = json::array(
      {{{"id", 300}, {"content", "<|endoftext|>"}, {"special", true}, {"normalized", false}},
       {{"id", 301}, {"content", "<|end|>"}, {"special", true}, {"normalized", false}},
       {{"id", 302}, {"content", "<s>"}, {"special", true}, {"normalized", false}}});
  j["post_processor"] = {{"type", "TemplateProcessing"},
                         {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
                         {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {302}}, {"tokens", {"<s>"}}}}}}};
  Tokenizer t = make(j);
  EXPECT_EQ(t.vocab_size(), 303u);
  EXPECT_TRUE(t.is_special(300));
  EXPECT_FALSE(t.is_special(256));
  std::vector<TokenId> hi = ids_of(t, {"hi"});
  std::vector<TokenId> ids = t.encode("hi<|endoftext|>hi<|end|>", false);
  EXPECT_EQ(ids, (std::vector<TokenId>{hi[0], 300, hi[0], 301}));  // longest match at a position
  EXPECT_EQ(t.encode("hi", true), (std::vector<TokenId>{302, hi[0]}));  // the template's BOS
  EXPECT_EQ(t.decode(ids), "hi<|endoftext|>hi<|end|>");
  EXPECT_EQ(t.decode(ids, true), "hihi");
  EXPECT_EQ(t.token_to_id("<|end|>"), 301);
  EXPECT_EQ(t.id_to_token(300), "<|endoftext|>");
}

TEST(Tokenizer, StreamingHoldsBackAnUnfinishedCharacter) {
  Tokenizer t = make(tokenizer_json({}, {}));
  std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600, one token per byte
  std::vector<TokenId> ids = t.encode("a" + emoji + "b", false);
  ASSERT_EQ(ids.size(), 6u);
  Tokenizer::StreamDecoder s = t.stream_decoder();
  EXPECT_EQ(s.push(ids[0]), "a");
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_EQ(s.push(ids[i]), "") << i;
    EXPECT_EQ(s.pending_bytes(), i);
  }
  EXPECT_EQ(s.push(ids[4]), emoji);
  EXPECT_EQ(s.push(ids[5]), "b");
  EXPECT_EQ(s.finish(), "");

  // A character cut off by a complete one reads as U+FFFD, as decode() reads it; finish()
  // flushes one that never completed.
  Tokenizer::StreamDecoder cut = t.stream_decoder();
  std::string streamed;
  for (TokenId id : {ids[1], ids[2], ids[0], ids[1]}) streamed += cut.push(id);  // F0 9F 'a' F0
  streamed += cut.finish();
  EXPECT_EQ(streamed, t.decode(std::vector<TokenId>{ids[1], ids[2], ids[0], ids[1]}));
  EXPECT_EQ(streamed, "\xEF\xBF\xBD" "a" "\xEF\xBF\xBD");
}

TEST(Tokenizer, SplitPreTokenizerAndSequence) {
  json j = tokenizer_json({"a a"}, {"aa"});
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Split"},
                                                        {"pattern", {{"String", "-"}}},
                                                        {"behavior", "Removed"},
                                                        {"invert", false}},
                                                       {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}})}};
  Tokenizer t = make(j);
  EXPECT_EQ(t.encode("aa-a--aa", false), ids_of(t, {"aa", "a", "aa"}));
}

TEST(Tokenizer, ConstMethodsRunConcurrently) {
  Tokenizer t = make(tokenizer_json({"l l", "h e", "he ll", "hell o", "Ġ hello"}, {"ll", "he", "hell", "hello", "Ġhello"}));
  std::vector<std::string> texts = {"hello hello", "héllo \xF0\x9F\x98\x80 hello", "  \thello\r\nhello  ", "x"};
  std::vector<std::vector<TokenId>> expected;
  for (const auto& text : texts) expected.push_back(t.encode(text));
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      for (int round = 0; round < 200; ++round)
        for (size_t i = 0; i < texts.size(); ++i) {
          std::vector<TokenId> ids = t.encode(texts[i]);
          failures[k] += ids != expected[i] || t.decode(ids) != texts[i];
        }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, std::vector<int>(4, 0));
}

TEST(Tokenizer, MalformedFilesGiveOneLineErrors) {
  json j = tokenizer_json({}, {});
  j.erase("model");
  expect_error(j, "missing \"model\"");
  expect_error(tokenizer_json({"a"}, {}), "model.merges[0]");
  expect_error(tokenizer_json({"a b"}, {}), "\"ab\", which is not in the vocab");
  j = tokenizer_json({}, {});
  j["model"]["type"] = "WordPiece";
  expect_error(j, "type \"WordPiece\" is not supported", ErrorKind::UnsupportedOp);
  j["model"]["type"] = "Unigram";
  expect_error(j, "type \"Unigram\" is not supported", ErrorKind::UnsupportedOp);
  j = tokenizer_json({}, {});
  j["model"]["vocab"]["x"] = -3;
  expect_error(j, "model.vocab[\"x\"]");
  j = tokenizer_json({}, {});
  j["normalizer"] = {{"type", "NFC"}};
  expect_error(j, "normalizer", ErrorKind::UnsupportedOp);
  j = tokenizer_json({}, {});
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  expect_error(j, "does not compile");
  try {
    Tokenizer::from_json("{\"model\": ", "broken.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("broken.json: not valid JSON"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Tokenizer::load("/nonexistent/folder"), Error);
  // A normalizer nested 200,000 deep parsed, then its copy overflowed the stack (a crash).
  const std::string deep = "{\"model\": {}, \"normalizer\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  try {
    Tokenizer::from_json(deep, "deep.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("deep.json: not valid JSON"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, BadIdsAndTextAreRefused) {
  Tokenizer t = make(tokenizer_json({}, {}));
  EXPECT_THROW(t.decode(std::vector<TokenId>{256}), Error);
  EXPECT_THROW(t.decode(std::vector<TokenId>{-1}), Error);
  EXPECT_THROW(t.id_to_token(1000), Error);
  EXPECT_THROW(t.stream_decoder().push(-1), Error);
  // A generated id past the vocabulary (logits wider than the tokenizer) adds no text: it ended
  // the generation with an error.
  auto stream = t.stream_decoder();
  EXPECT_EQ(stream.push(999), "");
  EXPECT_EQ(stream.push(static_cast<TokenId>('a')) + stream.finish(), "a");
  EXPECT_THROW(t.encode("\xC3", false), Error);  // not UTF-8
  EXPECT_FALSE(t.token_to_id("nope").has_value());
  EXPECT_TRUE(t.encode("", true).empty());
}

}  // namespace
}  // namespace fusor
