// Chat messages -> one prompt string, as Hugging Face transformers' apply_chat_template does it.
//
// A model's tokenizer_config.json may carry a `chat_template`: a Jinja template over `messages`
// (a list of {"role", "content", and any other fields a message has}), `add_generation_prompt` and the special tokens (`bos_token`,
// `eos_token`, `unk_token`, `pad_token`). fusor renders the subset of Jinja the common templates
// use (ChatML/Qwen, Llama 2 and 3, Mistral, Zephyr, Gemma, Phi-3), with the whitespace handling
// transformers sets (trim_blocks, lstrip_blocks):
//   {{ expr }}, {% if/elif/else %}, {% for x in xs [if c] %} with loop.index/index0/first/last/
//   length/revindex, {% set x = ... %} and namespace(), {# comments #}, "-"/"+" whitespace marks;
//   literals (str, int, float, true/false/none, lists, dicts), x.attr, x['key'], slices x[1:],
//   + - * / // % ** ~, comparisons, and/or/not, in, `a if c else b`; tests defined, none, string,
//   number, mapping, iterable, odd, even, ...; filters trim, upper, lower, length, tojson, default,
//   join, first, last, replace, ...; str methods strip, startswith, split, ...; dict items/get;
//   raise_exception(msg).
// Anything else is refused when parsing, with the line: "chat template line 3: unknown filter 'foo'".
// Without a chat_template, the plain template (docs/generate.md) writes "<role>: <content>\n" per
// message, then "assistant:" when a generation prompt is asked for.
//
// A ChatTemplate is immutable: copies share it, and apply() may run on many threads at once.
#pragma once
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace fusor {

struct ChatMessage {
  std::string role, content;
  // The message's other fields (tool_calls, tool_call_id, name, ...) as one JSON object's text,
  // "" for none: the template sees them as transformers' apply_chat_template passes them. A
  // "content" there (a list of parts) replaces `content` for the template.
  std::string fields_json;
};

class ChatTemplate {
  struct Impl;

 public:
  // Parses a template in the subset above; a syntax error or a construct outside it is an
  // InvalidArgument fusor::Error naming the line.
  static ChatTemplate parse(std::string_view source);
  // The fallback when a model has no template.
  static ChatTemplate plain();
  // For a model folder, or a file inside one (tokenizer.json, model.onnx): tokenizer_config.json's
  // chat_template (a string, or a list of {"name", "template"} whose "default" is taken) with its
  // special tokens (strings or {"content": ...} objects; special_tokens_map.json fills in missing
  // ones); the plain template when the folder has none. A malformed file or template is an
  // InvalidArgument error naming it.
  static ChatTemplate for_model(const std::string& path);

  // Sets a special token the template sees as a variable ("bos_token", "eos_token", ...).
  ChatTemplate with_token(const std::string& name, const std::string& value) const;

  // The prompt for `messages`; add_generation_prompt asks the template to end with the start of
  // an assistant turn. A template's raise_exception('...') is an InvalidArgument Error with that
  // message; other rendering failures are InvalidArgument errors naming the template line.
  std::string apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const;

  bool is_plain() const;  // the fallback, not the model's template
  // Whether the template loops over a message's content (`for part in message['content']`), as
  // the multimodal templates do (Gemma 3, Llama 4): vLLM then passes the content as a list of
  // {"type": "text", "text": ...} parts (its "openai" content format) rather than one string.
  bool loops_over_content() const;
  const std::string& source() const;

 private:
  static ChatTemplate compile(std::string_view source, bool plain);
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace fusor
