// The text of generated tokens as it streams: complete UTF-8 characters only (the tokenizer's
// StreamDecoder), with stop strings found across token boundaries. Text that could be the start
// of a stop string is held back until it is not, so a caller never shows text that a stop string
// later takes back.
#pragma once
#include <string>
#include <vector>

#include "fusor/tokenizer.h"

namespace fusor {

class TextStream {
 public:
  TextStream(const Tokenizer& tokenizer, bool skip_special_tokens, std::vector<std::string> stop);

  struct Piece {
    std::string text;      // safe to show now
    bool stopped = false;  // a stop string completed: the text ends right before it
  };
  // The text `id` adds. After a stop, nothing more.
  Piece push(TokenId id);
  // At the end of generation: what was held back (an unfinished character as U+FFFD, the start
  // of a stop string that never completed), or the text up to a stop string it completes.
  Piece finish();
  // Everything shown so far: the pieces joined.
  const std::string& text() const { return shown_; }

 private:
  Piece release(std::string added, bool last);

  Tokenizer::StreamDecoder decoder_;
  std::vector<std::string> stop_;
  std::string all_;      // the decoded text so far
  std::string shown_;    // its prefix given out
  bool stopped_ = false;
};

}  // namespace fusor
