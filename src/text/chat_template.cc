// The public chat template: a parsed Jinja template plus the special tokens it sees, and the
// reading of a model folder's tokenizer_config.json.
#include "fusor/chat_template.h"

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "fusor/error.h"
#include "io/json_depth.h"
#include "text/jinja_builtins.h"
#include "text/jinja_eval.h"
#include "text/jinja_lexer.h"
#include "text/jinja_parser.h"

namespace fusor {

namespace jinja = text::jinja;

struct ChatTemplate::Impl {
  std::string source;
  std::shared_ptr<const jinja::Body> body;  // shared by the copies with_token makes
  jinja::Dict tokens;
  bool plain = false;
  bool loops_over_content = false;
};

namespace {

// One line per message, then the assistant's turn: readable, and what a model without a
// template of its own (a base model) continues sensibly.
constexpr std::string_view kPlainTemplate =
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}";

[[noreturn]] void invalid(const std::string& message) { throw Error(message, ErrorKind::InvalidArgument); }

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) invalid("cannot read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

nlohmann::json read_json(const std::filesystem::path& path) {
  const std::string text = read_file(path);
  if (!json_depth_within(text)) invalid(path.string() + ": malformed JSON: nests deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    invalid(path.string() + ": malformed JSON: " + what.substr(0, what.find('\n')));
  }
}

// A special token as tokenizer_config.json writes it: a string, or an AddedToken object.
std::optional<std::string> token_text(const nlohmann::json& config, const std::string& key, const std::string& origin) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) return (*it)["content"].get<std::string>();
  invalid(origin + ": \"" + key + "\" is neither a string nor an object with a string \"content\"");
}

std::string template_text(const nlohmann::json& value, const std::string& origin) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_array()) {  // transformers' named templates: [{"name": ..., "template": ...}]
    for (const auto& entry : value) {
      if (!entry.is_object() || !entry.contains("name") || !entry.contains("template") || !entry["name"].is_string() ||
          !entry["template"].is_string())
        invalid(origin + ": \"chat_template\" list entries must be {\"name\": str, \"template\": str}");
      if (entry["name"] == "default") return entry["template"].get<std::string>();
    }
    invalid(origin + ": \"chat_template\" has no template named \"default\"");
  }
  invalid(origin + ": \"chat_template\" is neither a string nor a list of named templates");
}

// A JSON value as the template sees it (Python's json.loads): numbers that are integers stay
// integers; an object keeps its keys in their order.
jinja::Value value_of(const nlohmann::ordered_json& v) {
  switch (v.type()) {
    case nlohmann::ordered_json::value_t::null: return jinja::Value::none();
    case nlohmann::ordered_json::value_t::boolean: return jinja::Value::boolean(v.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return jinja::Value::integer(v.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned:
      if (v.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return jinja::Value::integer(static_cast<int64_t>(v.get<uint64_t>()));
      return jinja::Value::number(v.get<double>());
    case nlohmann::ordered_json::value_t::number_float: return jinja::Value::number(v.get<double>());
    case nlohmann::ordered_json::value_t::string: return jinja::Value::string(v.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      jinja::List items;
      for (const auto& item : v) items.push_back(value_of(item));
      return jinja::Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      jinja::Dict entries;
      for (const auto& [key, item] : v.items()) entries.emplace_back(key, value_of(item));
      return jinja::Value::dict(std::move(entries));
    }
    default: invalid("a chat message holds a value that is not JSON");
  }
}

// Whether an expression reads an attribute or item named "content" (m.content, m['content']).
bool reads_content(const jinja::Expr& e) {
  using K = jinja::Expr::Kind;
  return (e.kind == K::Attribute && e.name == "content") ||
         (e.kind == K::Item && e.items.size() == 2 && e.items[1] && e.items[1]->kind == K::Literal &&
          e.items[1]->value.is(jinja::Value::Kind::String) && e.items[1]->value.as_string() == "content");
}

// vLLM's test for its "openai" content format: a for loop over some message's content.
bool has_content_loop(const jinja::Body& body) {
  for (const jinja::Node& n : body) {
    if (n.kind == jinja::Node::Kind::For && n.expr && reads_content(*n.expr)) return true;
    for (const jinja::Body& inner : n.bodies)
      if (has_content_loop(inner)) return true;
  }
  return false;
}

}  // namespace

ChatTemplate ChatTemplate::parse(std::string_view source) { return compile(source, false); }

ChatTemplate ChatTemplate::compile(std::string_view source, bool plain) {
  auto impl = std::make_shared<Impl>();
  impl->source = std::string(source);
  try {
    impl->body = std::make_shared<jinja::Body>(jinja::parse_template(source));
  } catch (const jinja::SyntaxError& e) {
    invalid("chat template line " + std::to_string(e.line) + ": " + e.message);
  }
  impl->plain = plain;
  impl->loops_over_content = has_content_loop(*impl->body);
  return ChatTemplate(std::move(impl));
}

ChatTemplate ChatTemplate::plain() { return compile(kPlainTemplate, true); }

ChatTemplate ChatTemplate::for_model(const std::string& path) {
  namespace fs = std::filesystem;
  if (!fs::exists(path)) invalid("no model folder or file at " + path);
  fs::path folder = fs::is_directory(path) ? fs::path(path) : fs::path(path).parent_path();
  if (folder.empty()) folder = ".";
  fs::path config_path = folder / "tokenizer_config.json";
  if (!fs::exists(config_path)) return plain();
  const std::string origin = config_path.string();
  nlohmann::json config = read_json(config_path);
  if (!config.is_object()) invalid(origin + ": is not a JSON object");
  auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return plain();
  ChatTemplate t = [&] {
    try {
      return parse(template_text(*it, origin));
    } catch (const Error& e) {
      invalid(origin + ": " + e.what());
    }
  }();
  nlohmann::json token_map = nlohmann::json::object();
  if (fs::exists(folder / "special_tokens_map.json")) {
    token_map = read_json(folder / "special_tokens_map.json");
    if (!token_map.is_object()) invalid((folder / "special_tokens_map.json").string() + ": is not a JSON object");
  }
  for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"}) {
    std::optional<std::string> value = token_text(config, name, origin);
    if (!value) value = token_text(token_map, name, (folder / "special_tokens_map.json").string());
    if (value) t = t.with_token(name, *value);
  }
  return t;
}

ChatTemplate ChatTemplate::with_token(const std::string& name, const std::string& value) const {
  auto impl = std::make_shared<Impl>(*impl_);
  for (auto& [k, v] : impl->tokens)
    if (k == name) return v = jinja::Value::string(value), ChatTemplate(std::move(impl));
  impl->tokens.emplace_back(name, jinja::Value::string(value));
  return ChatTemplate(std::move(impl));
}

std::string ChatTemplate::apply(std::span<const ChatMessage> messages, bool add_generation_prompt) const {
  jinja::List list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    jinja::Dict fields = {{"role", jinja::Value::string(m.role)}, {"content", jinja::Value::string(m.content)}};
    if (!m.fields_json.empty()) {
      const nlohmann::ordered_json extra = nlohmann::ordered_json::parse(m.fields_json, nullptr, false);
      if (!extra.is_object()) invalid("a chat message's other fields are not a JSON object");
      for (const auto& [key, value] : extra.items()) {
        if (key == "content") fields[1].second = value_of(value);  // the parts, for a template that loops over them
        else if (key != "role") fields.emplace_back(key, value_of(value));
      }
    }
    list.push_back(jinja::Value::dict(std::move(fields)));
  }
  jinja::Dict globals = impl_->tokens;
  globals.emplace_back("messages", jinja::Value::list(std::move(list)));
  globals.emplace_back("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
  try {
    return jinja::render(*impl_->body, globals);
  } catch (const jinja::RenderError& e) {
    invalid("chat template line " + std::to_string(e.line) + ": " + e.message);
  } catch (const jinja::TemplateRaised& e) {
    invalid(e.message);
  }
}

bool ChatTemplate::is_plain() const { return impl_->plain; }
bool ChatTemplate::loops_over_content() const { return impl_->loops_over_content; }
const std::string& ChatTemplate::source() const { return impl_->source; }

}  // namespace fusor
