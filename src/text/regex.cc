#include "text/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "fusor/error.h"
#include "text/utf8.h"

namespace fusor::text {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

Regex::Regex(const std::string& pattern) : code_(std::make_unique<Code>()), pattern_(pattern) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (!code_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error("pre-tokenizer regex /" + pattern + "/ does not compile at offset " + std::to_string(offset) + ": " +
                    reinterpret_cast<const char*>(message),
                ErrorKind::InvalidModel);
  }
  pcre2_jit_compile(code_->code, PCRE2_JIT_COMPLETE);  // when JIT is unavailable the interpreter runs
}

Regex::~Regex() = default;

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  std::vector<std::pair<size_t, size_t>> matches;
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0;
  while (at <= text.size()) {
    int rc = pcre2_match(code_->code, subject, text.size(), at, PCRE2_NO_UTF_CHECK, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof message);
      throw Error("pre-tokenizer regex /" + pattern_ + "/ failed: " + reinterpret_cast<const char*>(message));
    }
    PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data.get());
    size_t begin = ov[0], end = ov[1];
    if (end < begin) break;  // \K tricks; none of the tokenizer patterns use them
    // An empty match still cuts the text (a Split keeps the cut), except right after a match.
    if (end > begin || matches.empty() || matches.back().second != begin) matches.emplace_back(begin, end);
    at = end > begin ? end
                     : end + (end < text.size() ? utf8_char_length(static_cast<unsigned char>(text[end])) : 1);
  }
  return matches;
}

}  // namespace fusor::text
