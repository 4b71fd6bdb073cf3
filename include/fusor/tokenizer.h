// Text <-> token ids for byte-level BPE models, read from Hugging Face's `tokenizer.json`.
//
// What it reads (and refuses everything else with a one-line fusor::Error naming the part):
//   model          "BPE": vocab, merges ("a b" strings or [a, b] pairs), unk_token, fuse_unk,
//                  byte_fallback, continuing_subword_prefix, end_of_word_suffix, ignore_merges
//   normalizer     null only
//   pre_tokenizer  ByteLevel (add_prefix_space, use_regex: GPT-2's split), Split (a regex such as
//                  Llama 3's, or a literal; every split behavior, invert), or a Sequence of them
//   post_processor TemplateProcessing, ByteLevel, RobertaProcessing, BertProcessing, Sequence
//   decoder        ByteLevel
//   added_tokens   matched in the raw text before pre-tokenization (leftmost, then longest), with
//                  single_word, lstrip, rstrip; `special` ones are dropped by skip_special_tokens
// The results equal Hugging Face `tokenizers` (tests/e2e/test_tokenizer.py compares them).
//
// A Tokenizer is immutable after load: copies share it, and every const method may be called
// from many threads at once. A StreamDecoder is one sequence's state: one thread at a time.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace fusor {

using TokenId = int32_t;

class Tokenizer {
  struct Impl;

 public:
  // `path` is a tokenizer.json file or a folder holding one. Throws fusor::Error (InvalidModel
  // for a malformed file, UnsupportedOp for a valid one that needs what fusor does not implement).
  static Tokenizer load(const std::string& path);
  // The same from the file's text; `origin` names it in error messages.
  static Tokenizer from_json(std::string_view json_text, const std::string& origin = "tokenizer.json");

  // Ids of `text` (which must be valid UTF-8, else InvalidArgument). add_special_tokens applies
  // the post-processor's template (e.g. a leading BOS); special tokens written in the text are
  // matched either way, as Hugging Face does.
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;

  // Text of `ids`: their bytes joined, then read as UTF-8 with each invalid or truncated sequence
  // replaced by U+FFFD. An id the vocabulary lacks is an InvalidArgument error.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  // Decodes one id at a time for generation: push() returns only text whose UTF-8 characters
  // are complete and holds back the bytes of an unfinished one (a 4-byte emoji may come as
  // several ids); finish() flushes what is held (as U+FFFD if it never completed). The pieces
  // joined equal decode() of all the ids pushed. An id past the vocabulary (a model whose logits
  // are wider than its tokenizer) adds no text.
  class StreamDecoder {
   public:
    std::string push(TokenId id);
    std::string finish();
    // Bytes held back, waiting for the rest of a character (0 to 3).
    size_t pending_bytes() const { return pending_.size(); }

   private:
    friend class Tokenizer;
    StreamDecoder(std::shared_ptr<const Impl> impl, bool skip_special_tokens)
        : impl_(std::move(impl)), skip_special_(skip_special_tokens) {}
    std::shared_ptr<const Impl> impl_;
    bool skip_special_;
    std::string pending_;
  };
  StreamDecoder stream_decoder(bool skip_special_tokens = false) const;

  // The id of a token as written in the vocabulary or added_tokens (byte-level form, e.g. "Ġthe").
  std::optional<TokenId> token_to_id(std::string_view token) const;
  // The token of an id in that form; InvalidArgument when no token has it.
  std::string id_to_token(TokenId id) const;
  // One past the largest id (model vocabulary and added tokens): the logits' width at least.
  size_t vocab_size() const;
  // Whether `id` is an added token marked special (BOS, EOS, chat markers).
  bool is_special(TokenId id) const;

 private:
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace fusor
