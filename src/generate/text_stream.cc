#include "generate/text_stream.h"

#include <algorithm>

#include "fusor/error.h"

namespace fusor {

TextStream::TextStream(const Tokenizer& tokenizer, bool skip_special_tokens, std::vector<std::string> stop)
    : decoder_(tokenizer.stream_decoder(skip_special_tokens)), stop_(std::move(stop)) {
  for (const std::string& s : stop_)
    if (s.empty()) throw Error("a stop string must not be empty", ErrorKind::InvalidArgument);
}

TextStream::Piece TextStream::push(TokenId id) {
  if (stopped_) return {};
  return release(decoder_.push(id), false);
}

TextStream::Piece TextStream::finish() {
  if (stopped_) return {};
  return release(decoder_.finish(), true);
}

TextStream::Piece TextStream::release(std::string added, bool last) {
  all_ += added;
  // A stop string cannot start inside the shown text: its start would have been held back.
  size_t cut = std::string::npos;
  for (const std::string& s : stop_) cut = std::min(cut, all_.find(s, shown_.size()));
  if (cut != std::string::npos) {
    stopped_ = true;
    Piece piece{all_.substr(shown_.size(), cut - shown_.size()), true};
    shown_ += piece.text;
    return piece;
  }
  // Hold back the longest end of the text that begins some stop string. It starts where a stop
  // string's first byte is, so it never splits a UTF-8 character.
  size_t hold = 0;
  if (!last)
    for (const std::string& s : stop_)
      for (size_t k = std::min(s.size() - 1, all_.size() - shown_.size()); k > hold; --k)
        if (all_.compare(all_.size() - k, k, s, 0, k) == 0) {
          hold = k;
          break;
        }
  Piece piece{all_.substr(shown_.size(), all_.size() - hold - shown_.size()), false};
  shown_ += piece.text;
  return piece;
}

}  // namespace fusor
