// Chat templates: tokenizer_config.json's Jinja chat_template (a subset of Jinja), or a plain
// template when the model has none. (Interface stub; the implementation lands with the chat
// template work of issue #17.)
#pragma once
#include <span>
#include <string>
#include <string_view>

namespace fusor {

struct ChatMessage {
  std::string role, content;
};

class ChatTemplate {
 public:
  static ChatTemplate parse(std::string_view source);
  static ChatTemplate for_model(const std::string& path);
  std::string apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const;
  bool is_plain() const { return source_.empty(); }

 private:
  std::string source_;
};

}  // namespace fusor
