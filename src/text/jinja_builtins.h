// What a chat template may call: global functions, filters, tests and the str and dict methods
// templates use. The parser asks the is_* predicates, so an unknown filter, test or function is
// a syntax error naming it; a method is looked up when rendering, where the value's type is known.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "text/jinja_value.h"

namespace fusor::text::jinja {

// raise_exception(message): the template refuses the messages; the message is the caller's error.
struct TemplateRaised {
  std::string message;
};

// Call arguments: the positional ones, then keywords.size() keyword ones named in order.
struct Args {
  std::vector<Value> values;
  std::vector<std::string> keywords;
  size_t positional() const { return values.size() - keywords.size(); }
  // The argument at `index` or named `name`, or nullptr.
  const Value* get(size_t index, std::string_view name) const;
};

bool is_function(std::string_view name);
bool is_filter(std::string_view name);
bool is_test(std::string_view name);

Value call_function(const std::string& name, const Args& args);
Value apply_filter(const std::string& name, const Value& operand, const Args& args);
bool apply_test(const std::string& name, const Value& operand, const Args& args);
Value call_method(const Value& object, const std::string& name, const Args& args);

// The items a for loop, join or list sees: a list's items, a string's characters, a dict's keys.
List items_of(const Value& v, const std::string& what);
// item.attribute or item['attribute'], as jinja's attribute getter reads it for map, join, sort:
// "a.b" walks down and a part of digits indexes a list; Undefined where nothing is there.
Value attribute_of(const Value& item, const Value& attribute, const std::string& what);

// Code point boundaries of UTF-8 text (Python indexes str by code point): the byte offset of each
// character's start, then one for the end.
std::vector<size_t> char_offsets(const std::string& s);

}  // namespace fusor::text::jinja
