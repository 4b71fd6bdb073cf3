// Stub until the chat template work lands: the plain template only.
#include "fusor/chat_template.h"

#include "fusor/error.h"

namespace fusor {

ChatTemplate ChatTemplate::parse(std::string_view) { throw Error("chat templates are not implemented yet", ErrorKind::UnsupportedOp); }
ChatTemplate ChatTemplate::for_model(const std::string&) { return ChatTemplate(); }
std::string ChatTemplate::apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  std::string out;
  for (const ChatMessage& m : messages) out += m.role + ": " + m.content + "\n";
  if (add_generation_prompt) out += "assistant:";
  return out;
}

}  // namespace fusor
