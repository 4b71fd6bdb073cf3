#include "text/jinja_builtins.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <array>
#include <ctime>
#include <cctype>

#include "text/jinja_collection_filters.h"
#include "text/jinja_percent_format.h"

namespace fusor::text::jinja {
namespace {

// strftime_now(format): the local time, as transformers (4.43 on) and vLLM give templates (Llama
// 3.2's writes "Today Date: ..." with it).
constexpr std::array<std::string_view, 5> kFunctions = {"raise_exception", "namespace", "range", "dict", "strftime_now"};
constexpr std::array<std::string_view, 32> kFilters = {
    "trim", "upper", "lower", "capitalize", "title", "length", "count", "tojson", "default", "d",
    "join", "first", "last", "string", "list", "replace", "reverse", "int", "items", "abs",
    "map", "select", "reject", "selectattr", "rejectattr", "round", "float", "indent", "safe", "escape", "e", "format"};
constexpr std::array<std::string_view, 35> kTests = {
    "defined", "undefined", "none", "string", "number", "integer", "float", "boolean", "true",
    "false", "mapping", "iterable", "sequence", "odd", "even", "divisibleby", "callable",
    "equalto", "eq", "==", "ne", "!=", "in", "gt", ">", "greaterthan", "ge", ">=", "lt", "<",
    "lessthan", "le", "<=", "lower", "upper"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

[[noreturn]] void fail(const std::string& message) { throw EvalError(message); }

const Value& need(const Args& args, size_t index, std::string_view name, const std::string& what) {
  const Value* v = args.get(index, name);
  if (!v) fail(what + ": missing argument '" + std::string(name) + "'");
  return *v;
}

const std::string& need_string(const Value& v, const std::string& what) {
  if (!v.is(Value::Kind::String)) fail(what + ": expected a str, got " + v.type_name());
  return v.as_string();
}

// Python's str.isspace() code points, read from the UTF-8 text at `s[i]` (length in `len`).
bool space_at(const std::string& s, size_t i, size_t& len) {
  unsigned char c = s[i];
  len = 1;
  if (c < 0x80) return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20);
  std::string_view rest = std::string_view(s).substr(i);
  static const std::array<std::string_view, 18> kWide = {
      "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x80", "\xe2\x80\x81", "\xe2\x80\x82",
      "\xe2\x80\x83", "\xe2\x80\x84", "\xe2\x80\x85", "\xe2\x80\x86", "\xe2\x80\x87", "\xe2\x80\x88",
      "\xe2\x80\x89", "\xe2\x80\x8a", "\xe2\x80\xa8", "\xe2\x80\xa9", "\xe2\x80\xaf", "\xe3\x80\x80"};
  for (std::string_view w : kWide)
    if (rest.substr(0, w.size()) == w) return len = w.size(), true;
  if (rest.substr(0, 3) == "\xe2\x81\x9f") return len = 3, true;  // U+205F
  return false;
}

// str.strip / lstrip / rstrip: Unicode whitespace, or the characters of `chars` when given.
std::string strip(const std::string& s, const Value* chars, bool left, bool right) {
  std::vector<size_t> at = char_offsets(s);
  size_t n = at.size() - 1, begin = 0, end = n;
  auto strippable = [&](size_t k) {
    std::string_view ch = std::string_view(s).substr(at[k], at[k + 1] - at[k]);
    if (chars && chars->is(Value::Kind::String)) return chars->as_string().find(ch) != std::string::npos;
    size_t len;
    return space_at(s, at[k], len);
  };
  while (left && begin < end && strippable(begin)) ++begin;
  while (right && end > begin && strippable(end - 1)) --end;
  return s.substr(at[begin], at[end] - at[begin]);
}

// ASCII case mappings: what chat templates apply them to (roles, markers) is ASCII.
std::string map_case(std::string s, bool upper) {
  for (char& c : s) c = char(upper ? std::toupper(static_cast<unsigned char>(c)) : std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string title_case(std::string s) {
  bool previous_cased = false;
  for (char& c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    c = char(previous_cased ? std::tolower(u) : std::toupper(u));
    previous_cased = std::isalpha(u);
  }
  return s;
}

std::vector<Value> split_whitespace(const std::string& s, int64_t max_split) {
  std::vector<Value> out;
  size_t i = 0, len = 0;
  while (i < s.size()) {
    while (i < s.size() && space_at(s, i, len)) i += len;
    if (i >= s.size()) break;
    if (max_split >= 0 && int64_t(out.size()) == max_split) {  // the rest, trailing spaces and all
      out.push_back(Value::string(s.substr(i)));
      break;
    }
    size_t j = i;
    while (j < s.size() && !space_at(s, j, len)) ++j;
    out.push_back(Value::string(s.substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<Value> split_on(const std::string& s, const std::string& sep, int64_t max_split) {
  if (sep.empty()) fail("split: empty separator");
  std::vector<Value> out;
  size_t start = 0, at;
  while ((max_split < 0 || int64_t(out.size()) < max_split) && (at = s.find(sep, start)) != std::string::npos) {
    out.push_back(Value::string(s.substr(start, at - start)));
    start = at + sep.size();
  }
  out.push_back(Value::string(s.substr(start)));
  return out;
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every character
    std::vector<size_t> at = char_offsets(s);
    for (size_t k = 0; k + 1 < at.size(); ++k) {
      if (count < 0 || int64_t(k) < count) out += to;
      out += s.substr(at[k], at[k + 1] - at[k]);
    }
    if (count < 0 || int64_t(at.size() - 1) < count) out += to;
    if (out.size() > kMaxValueSize) fail("replace: result too large");
    return out;
  }
  size_t start = 0, at;
  for (int64_t n = 0; (count < 0 || n < count) && (at = s.find(from, start)) != std::string::npos; ++n) {
    out += s.substr(start, at - start) + to;
    start = at + from.size();
    if (out.size() > kMaxValueSize) fail("replace: result too large");
  }
  return out + s.substr(start);
}

}  // namespace

// The items a for loop, join or list sees: a list's items, a string's characters, a dict's keys.
List items_of(const Value& v, const std::string& what) {
  switch (v.kind()) {
    case Value::Kind::List: return v.as_list();
    case Value::Kind::Undefined: return {};
    case Value::Kind::String: {
      List out;
      std::vector<size_t> at = char_offsets(v.as_string());
      for (size_t k = 0; k + 1 < at.size(); ++k) out.push_back(Value::string(v.as_string().substr(at[k], at[k + 1] - at[k])));
      return out;
    }
    case Value::Kind::Dict: {
      List out;
      for (const auto& entry : v.as_dict()) out.push_back(Value::string(entry.first));
      return out;
    }
    default: fail(what + ": a " + v.type_name() + " is not iterable");
  }
}

// item.attribute or item['attribute'] for map, selectattr and join: a dict's entry, else
// Undefined. As Jinja's attribute getter, "a.b" walks down and a part of digits indexes a list.
Value attribute_of(const Value& item, const Value& attribute, const std::string& what) {
  const std::string& path = need_string(attribute, what);
  Value current = item;
  for (size_t start = 0;;) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool index = !part.empty() && part.size() < 18 && std::all_of(part.begin(), part.end(), [](unsigned char c) { return std::isdigit(c); });
    if (index && current.is(Value::Kind::List)) {
      const size_t k = std::stoull(part);
      if (k >= current.as_list().size()) return Value();
      current = Value(current.as_list()[k]);
    } else {
      const Value* found = current.find(part);
      if (!found) return Value();
      current = Value(*found);
    }
    if (dot == std::string::npos) return current;
    start = dot + 1;
  }
}

namespace {

int64_t length_of(const Value& v, const std::string& what) {
  switch (v.kind()) {
    case Value::Kind::String: return int64_t(char_offsets(v.as_string()).size() - 1);
    case Value::Kind::List: return int64_t(v.as_list().size());
    case Value::Kind::Dict:
    case Value::Kind::Namespace: return int64_t(v.as_dict().size());
    case Value::Kind::Undefined: return 0;
    default: fail(what + ": a " + v.type_name() + " has no length");
  }
}

int64_t int_arg(const Value* v, int64_t fallback, const std::string& what) {
  if (!v || v->is(Value::Kind::None)) return fallback;
  if (!v->is(Value::Kind::Int) && !v->is(Value::Kind::Bool)) fail(what + ": expected an int, got " + v->type_name());
  return v->as_int();
}

Value dict_items(const Value& v) {
  List out;
  for (const auto& [k, val] : v.as_dict()) out.push_back(Value::tuple({Value::string(k), val}));
  return Value::list(std::move(out));
}

// select / reject / selectattr / rejectattr: the items (or their attribute) that pass a test
// named by the first argument (truthiness without one), the rest of the arguments going to it.
Value select_items(const std::string& name, const Value& v, const Args& args) {
  const std::string what = "filter '" + name + "'";
  bool by_attribute = name == "selectattr" || name == "rejectattr";
  bool keep_passing = name == "select" || name == "selectattr";
  if (!args.keywords.empty()) fail(what + ": keyword arguments are not supported");
  size_t first = by_attribute ? 1 : 0;
  if (by_attribute && args.values.empty()) fail(what + ": missing the attribute name");
  Args test_args;
  for (size_t k = first + 1; k < args.values.size(); ++k) test_args.values.push_back(args.values[k]);
  const Value* test = args.values.size() > first ? &args.values[first] : nullptr;
  if (test && (!test->is(Value::Kind::String) || !is_test(test->as_string())))
    fail(what + ": unknown test " + test->repr());
  List out;
  for (const Value& item : items_of(v, what)) {
    Value subject = by_attribute ? attribute_of(item, args.values[0], what) : item;
    bool passes = test ? apply_test(test->as_string(), subject, test_args) : subject.truthy();
    if (passes == keep_passing) out.push_back(item);
  }
  return Value::list(std::move(out));
}

// map(attribute='x'[, default=...]) or map('filter', args...).
Value map_items(const Value& v, const Args& args) {
  const std::string what = "filter 'map'";
  const Value* attribute = nullptr;
  for (size_t k = 0; k < args.keywords.size(); ++k)
    if (args.keywords[k] == "attribute") attribute = &args.values[args.positional() + k];
  List out;
  if (attribute) {
    const Value* fallback = nullptr;
    for (size_t k = 0; k < args.keywords.size(); ++k)
      if (args.keywords[k] == "default") fallback = &args.values[args.positional() + k];
    for (const Value& item : items_of(v, what)) {
      Value a = attribute_of(item, *attribute, what);
      out.push_back(a.is_undefined() && fallback ? *fallback : a);
    }
    return Value::list(std::move(out));
  }
  if (args.positional() == 0) fail(what + ": needs a filter name or attribute=");
  const std::string& filter = need_string(args.values[0], what);
  if (!is_filter(filter) || filter == "map") fail(what + ": unknown filter '" + filter + "'");
  Args rest;
  for (size_t k = 1; k < args.values.size(); ++k) rest.values.push_back(args.values[k]);
  rest.keywords = args.keywords;
  for (const Value& item : items_of(v, what)) out.push_back(apply_filter(filter, item, rest));
  return Value::list(std::move(out));
}

// round(precision=0, method='common'): 'common' is Python's round() (halves to even, on the
// decimal value of the binary number, as printf's correctly rounded digits give it); 'ceil' and
// 'floor' scale, round and scale back. An int stays an int under 'common', as in Python.
Value rounded(const Value& v, const Args& args, const std::string& what) {
  if (!v.is_number()) fail(what + ": expected a number, got " + v.type_name());
  const int64_t precision = int_arg(args.get(0, "precision"), 0, what);
  const Value* method = args.get(1, "method");
  const std::string how = method ? method->str() : "common";
  if (how != "common" && how != "ceil" && how != "floor") fail(what + ": method must be common, ceil or floor");
  if (precision < -308 || precision > 308) fail(what + ": precision out of range");
  const double x = v.as_float(), scale = std::pow(10.0, double(precision));
  if (how != "common") return Value::number((how == "ceil" ? std::ceil(x * scale) : std::floor(x * scale)) / scale);
  if (!v.is(Value::Kind::Float) && precision >= 0) return Value::integer(v.as_int());
  if (!std::isfinite(x)) return Value::number(x);
  if (precision < 0) {
    const double r = std::nearbyint(x / std::pow(10.0, double(-precision))) * std::pow(10.0, double(-precision));
    return v.is(Value::Kind::Float) ? Value::number(r) : Value::integer(int64_t(r));
  }
  char text[400];
  std::snprintf(text, sizeof text, "%.*f", int(std::min<int64_t>(precision, 340)), x);
  return Value::number(std::strtod(text, nullptr));
}

// tojson(ensure_ascii=False, indent=None, separators=None, sort_keys=False): transformers' filter,
// json.dumps with those arguments.
JsonOptions json_options(const Args& args, const std::string& what) {
  JsonOptions o;
  if (const Value* a = args.get(0, "ensure_ascii")) o.ensure_ascii = a->truthy();
  if (const Value* indent = args.get(1, "indent"); indent && !indent->is(Value::Kind::None)) {
    if (indent->is(Value::Kind::String)) o.indent = indent->as_string();
    else o.indent = std::string(size_t(std::clamp<int64_t>(int_arg(indent, 0, what), 0, 64)), ' ');
  }
  if (const Value* separators = args.get(2, "separators"); separators && !separators->is(Value::Kind::None)) {
    if (!separators->is(Value::Kind::List) || separators->as_list().size() != 2 || !separators->as_list()[0].is(Value::Kind::String) ||
        !separators->as_list()[1].is(Value::Kind::String))
      fail(what + ": separators must be two strings, (item, key)");
    o.item_separator = separators->as_list()[0].as_string();
    o.key_separator = separators->as_list()[1].as_string();
  }
  if (const Value* sort = args.get(3, "sort_keys")) o.sort_keys = sort->truthy();
  return o;
}

// markupsafe's escape: the five characters HTML gives meaning to.
std::string html_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  if (out.size() > kMaxValueSize) fail("filter 'escape': result too large");
  return out;
}

// indent(width=4, first=False, blank=False): every line but the first (and it too with first)
// gets `width` spaces, or the string width; empty lines only with blank. Lines split as
// str.splitlines() does.
std::string indented(const std::string& s, const Args& args, const std::string& what) {
  const Value* width = args.get(0, "width");
  std::string pad = width && width->is(Value::Kind::String) ? width->as_string() : std::string(size_t(std::clamp<int64_t>(int_arg(width, 4, what), 0, 4096)), ' ');
  const Value* first = args.get(1, "first");
  const Value* blank = args.get(2, "blank");
  std::vector<std::string> lines;
  const std::string text = s + "\n";  // jinja2 adds one, so a trailing newline leaves no empty line
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    size_t len = 0;
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\r') len = i + 1 < text.size() && text[i + 1] == '\n' ? 2 : 1;
    else if (c == '\n' || c == 0x0b || c == 0x0c || (c >= 0x1c && c <= 0x1e)) len = 1;
    else if (text.compare(i, 2, "\xc2\x85") == 0) len = 2;
    else if (text.compare(i, 3, "\xe2\x80\xa8") == 0 || text.compare(i, 3, "\xe2\x80\xa9") == 0) len = 3;
    if (len == 0) {
      ++i;
      continue;
    }
    lines.push_back(text.substr(start, i - start));
    start = i += len;
  }
  std::string out = lines.empty() ? "" : lines[0];
  for (size_t k = 1; k < lines.size(); ++k) {
    out += '\n';
    if ((blank && blank->truthy()) || !lines[k].empty()) out += pad;
    out += lines[k];
    if (out.size() > kMaxValueSize) fail(what + ": result too large");
  }
  return (first && first->truthy() ? pad : "") + out;
}

}  // namespace

const Value* Args::get(size_t index, std::string_view name) const {
  if (index < positional()) return &values[index];
  for (size_t k = 0; k < keywords.size(); ++k)
    if (keywords[k] == name) return &values[positional() + k];
  return nullptr;
}

std::vector<size_t> char_offsets(const std::string& s) {
  std::vector<size_t> out;
  out.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size();) {
    out.push_back(i);
    unsigned char c = s[i];
    size_t len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
    size_t k = 1;  // a malformed sequence counts byte by byte
    while (k < len && i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xc0) == 0x80) ++k;
    i += k == len ? len : 1;
  }
  out.push_back(s.size());
  return out;
}

bool is_function(std::string_view name) { return contains(kFunctions, name); }
bool is_filter(std::string_view name) { return contains(kFilters, name) || is_collection_filter(name); }
bool is_test(std::string_view name) { return contains(kTests, name); }

Value call_function(const std::string& name, const Args& args) {
  if (name == "raise_exception") {
    const Value* message = args.get(0, "message");
    throw TemplateRaised{message ? message->str() : "raise_exception called"};
  }
  if (name == "namespace" || name == "dict") {
    if (args.positional() > 0) fail(name + "(): only keyword arguments are supported");
    Dict attributes;
    for (size_t k = 0; k < args.keywords.size(); ++k) attributes.emplace_back(args.keywords[k], args.values[k]);
    return name == "dict" ? Value::dict(std::move(attributes)) : Value::ns(std::move(attributes));
  }
  if (name == "strftime_now") {
    if (args.positional() != 1 || !args.keywords.empty() || !args.values[0].is(Value::Kind::String))
      fail("strftime_now(): takes one format string");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    char text[256];
    const size_t n = std::strftime(text, sizeof text, args.values[0].as_string().c_str(), &local);
    if (n == 0 && !args.values[0].as_string().empty()) fail("strftime_now(): the format writes nothing or too much");
    return Value::string(std::string(text, n));
  }
  // range(stop) / range(start, stop[, step])
  if (args.positional() < 1 || args.positional() > 3 || !args.keywords.empty()) fail("range(): takes 1 to 3 ints");
  int64_t start = 0, stop, step = 1;
  if (args.positional() == 1) {
    stop = int_arg(&args.values[0], 0, "range()");
  } else {
    start = int_arg(&args.values[0], 0, "range()");
    stop = int_arg(&args.values[1], 0, "range()");
    if (args.positional() == 3) step = int_arg(&args.values[2], 1, "range()");
  }
  if (step == 0) fail("range(): step must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() >= kMaxValueSize / 64) fail("range(): too many items");
    out.push_back(Value::integer(i));
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::list(std::move(out));
}

Value apply_filter(const std::string& name, const Value& v, const Args& args) {
  using K = Value::Kind;
  const std::string what = "filter '" + name + "'";
  if (name == "default" || name == "d") {
    const Value* fallback = args.get(0, "default_value");
    const Value* boolean = args.get(1, "boolean");
    bool use_fallback = v.is_undefined() || (boolean && boolean->truthy() && !v.truthy());
    return use_fallback ? (fallback ? *fallback : Value::string("")) : v;
  }
  // jinja2 walks nothing for a false value (none, an empty string) instead of failing on it.
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr")
    return v.truthy() ? select_items(name, v, args) : Value::list({});
  if (name == "map") return v.truthy() ? map_items(v, args) : Value::list({});
  if (name == "length" || name == "count") return Value::integer(length_of(v, what));
  if (name == "tojson") return Value::string(to_json(v, json_options(args, what)));
  if (name == "string") return Value::string(v.str());
  if (name == "list") return Value::list(items_of(v, what));
  if (name == "items") {
    if (v.is_undefined()) return Value::list({});
    if (!v.is(K::Dict)) fail(what + ": expected a dict, got " + v.type_name());
    return dict_items(v);
  }
  if (name == "first" || name == "last") {
    List items = items_of(v, what);
    if (items.empty()) return Value();
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    List items = items_of(v, what);
    std::reverse(items.begin(), items.end());
    if (!v.is(K::String)) return Value::list(std::move(items));
    std::string out;
    for (const Value& c : items) out += c.as_string();
    return Value::string(out);
  }
  if (name == "join") {
    const Value* sep = args.get(0, "d");
    const Value* attribute = args.get(1, "attribute");
    std::string separator = sep ? sep->str() : "", out;
    List items = items_of(v, what);
    for (size_t k = 0; k < items.size(); ++k) {
      out += (k ? separator : "") + (attribute ? attribute_of(items[k], *attribute, what) : items[k]).str();
      if (out.size() > kMaxValueSize) fail(what + ": result too large");
    }
    return Value::string(out);
  }
  if (name == "int") {
    if (v.is_number()) return Value::integer(v.is(K::Float) ? int64_t(v.as_float()) : v.as_int());
    try {
      return Value::integer(std::stoll(v.str()));
    } catch (const std::exception&) {
      return Value::integer(int_arg(args.get(0, "default"), 0, what));
    }
  }
  if (is_collection_filter(name)) return apply_collection_filter(name, v, args);
  if (name == "round") return rounded(v, args, what);
  if (name == "float") {
    if (v.is_number()) return Value::number(v.as_float());
    const Value* fallback = args.get(0, "default");
    const std::string text = strip(v.str(), nullptr, true, true);
    char* end = nullptr;
    const double f = text.empty() ? 0 : std::strtod(text.c_str(), &end);
    if (!text.empty() && end == text.c_str() + text.size() && text.find_first_of("xXpP") == std::string::npos)
      return Value::number(f);  // strtod also reads C's hex floats, which Python's float() refuses
    return fallback ? *fallback : Value::number(0);
  }
  // safe marks text as markup, which matters only where autoescaping is on, and transformers'
  // template environment leaves it off.
  if (name == "safe") return v.is(K::String) ? v : Value::string(v.str());
  if (name == "escape" || name == "e") return Value::string(html_escaped(v.str()));
  if (name == "abs") {
    if (v.is(K::Float)) return Value::number(v.as_float() < 0 ? -v.as_float() : v.as_float());
    if (!v.is_number() || v.as_int() == INT64_MIN) fail(what + ": expected a number, got " + v.type_name());
    return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  // The rest take a string: jinja turns the value into one first.
  std::string s = v.str();
  if (name == "trim") return Value::string(strip(s, args.get(0, "chars"), true, true));
  if (name == "upper") return Value::string(map_case(s, true));
  if (name == "lower") return Value::string(map_case(s, false));
  if (name == "title") return Value::string(title_case(s));
  if (name == "capitalize") return Value::string(map_case(s.substr(0, 1), true) + map_case(s.size() > 1 ? s.substr(1) : "", false));
  if (name == "indent") return Value::string(indented(s, args, what));
  if (name == "format") {  // s % args, or s % kwargs
    if (args.positional() > 0 && !args.keywords.empty()) fail(what + ": can't handle positional and keyword arguments at the same time");
    if (args.keywords.empty()) return Value::string(percent_format(s, Value::tuple(args.values)));
    Dict named;
    for (size_t k = 0; k < args.keywords.size(); ++k) named.emplace_back(args.keywords[k], args.values[k]);
    return Value::string(percent_format(s, Value::dict(std::move(named))));
  }
  if (name == "replace") {
    const std::string& from = need_string(need(args, 0, "old", what), what);
    const std::string& to = need_string(need(args, 1, "new", what), what);
    return Value::string(replace_all(s, from, to, int_arg(args.get(2, "count"), -1, what)));
  }
  fail("unknown filter '" + name + "'");
}

bool apply_test(const std::string& name, const Value& v, const Args& args) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is(K::None);
  if (name == "string") return v.is(K::String);
  if (name == "number") return v.is_number();
  if (name == "integer") return v.is(K::Int);
  if (name == "float") return v.is(K::Float);
  if (name == "boolean") return v.is(K::Bool);
  if (name == "true") return v.is(K::Bool) && v.as_bool();
  if (name == "false") return v.is(K::Bool) && !v.as_bool();
  if (name == "mapping") return v.is(K::Dict);
  if (name == "iterable") return v.is(K::List) || v.is(K::String) || v.is(K::Dict) || v.is_undefined();
  if (name == "sequence") return v.is(K::List) || v.is(K::String) || v.is(K::Dict);
  if (name == "callable") return false;
  if (name == "equalto" || name == "eq" || name == "==" || name == "ne" || name == "!=")
    return equal(v, need(args, 0, "other", "test '" + name + "'")) != (name == "ne" || name == "!=");
  const std::string what = "test '" + name + "'";
  if (name == "in") return jinja::contains(v, need(args, 0, "seq", what));
  if (name == "lower" || name == "upper") {  // str.islower() / isupper(), ASCII letters
    if (!v.is(K::String)) return false;
    const std::string& s = v.as_string();
    const bool cased = std::any_of(s.begin(), s.end(), [](unsigned char c) { return std::isalpha(c); });
    return cased && std::none_of(s.begin(), s.end(), [&](unsigned char c) { return name == "lower" ? std::isupper(c) : std::islower(c); });
  }
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 10> kComparisons = {{
      {"gt", ">"}, {">", ">"}, {"greaterthan", ">"}, {"ge", ">="}, {">=", ">="},
      {"lt", "<"}, {"<", "<"}, {"lessthan", "<"}, {"le", "<="}, {"<=", "<="}}};
  for (const auto& [test, op] : kComparisons)
    if (name == test) {
      const int c = compare(v, need(args, 0, "other", what));
      if (c == 2) fail(what + ": cannot compare a " + v.type_name() + " with it");
      return op == ">" ? c > 0 : op == ">=" ? c >= 0 : op == "<" ? c < 0 : c <= 0;
    }
  if (name == "odd" || name == "even" || name == "divisibleby") {
    if (!v.is(K::Int) && !v.is(K::Bool)) fail(what + ": expected an int, got " + v.type_name());
    int64_t divisor = name == "divisibleby" ? int_arg(&need(args, 0, "num", what), 0, what) : 2;
    if (divisor == 0) fail(what + ": division by zero");
    int64_t r = divisor == -1 ? 0 : v.as_int() % divisor;
    return name == "odd" ? r != 0 : r == 0;
  }
  fail("unknown test '" + name + "'");
}

Value call_method(const Value& object, const std::string& name, const Args& args) {
  using K = Value::Kind;
  const std::string what = std::string(object.type_name()) + "." + name + "()";
  if (object.is(K::String)) {
    const std::string& s = object.as_string();
    if (name == "strip" || name == "lstrip" || name == "rstrip")
      return Value::string(strip(s, args.get(0, "chars"), name != "rstrip", name != "lstrip"));
    if (name == "upper") return Value::string(map_case(s, true));
    if (name == "lower") return Value::string(map_case(s, false));
    if (name == "title") return Value::string(title_case(s));
    if (name == "capitalize") return apply_filter("capitalize", object, {});
    if (name == "startswith" || name == "endswith") {
      const Value& arg = need(args, 0, "prefix", what);
      List candidates = arg.is(K::List) ? arg.as_list() : List{arg};
      for (const Value& c : candidates) {
        const std::string& p = need_string(c, what);
        bool hit = p.size() <= s.size() && (name == "startswith" ? s.compare(0, p.size(), p) == 0
                                                                  : s.compare(s.size() - p.size(), p.size(), p) == 0);
        if (hit) return Value::boolean(true);
      }
      return Value::boolean(false);
    }
    if (name == "split") {
      const Value* sep = args.get(0, "sep");
      int64_t max_split = int_arg(args.get(1, "maxsplit"), -1, what);
      if (!sep || sep->is(K::None)) return Value::list(split_whitespace(s, max_split));
      return Value::list(split_on(s, need_string(*sep, what), max_split));
    }
    if (name == "replace") return apply_filter("replace", object, args);
  }
  if (object.is(K::Dict)) {
    if (name == "items") return dict_items(object);
    if (name == "keys") return Value::list(items_of(object, what));
    if (name == "values") {
      List out;
      for (const auto& entry : object.as_dict()) out.push_back(entry.second);
      return Value::list(std::move(out));
    }
    // loop.cycle(a, b, ...): the loop variable is a dict holding index0 (jinja_eval.cc).
    if (const Value* index = object.find("index0"); name == "cycle" && index && object.find("revindex0")) {
      if (args.positional() == 0 || !args.keywords.empty()) fail("loop.cycle(): takes one or more values");
      return args.values[size_t(index->as_int() % int64_t(args.positional()))];
    }
    if (name == "get") {
      const Value* found = object.find(need_string(need(args, 0, "key", what), what));
      if (found) return *found;
      const Value* fallback = args.get(1, "default");
      return fallback ? *fallback : Value::none();
    }
  }
  fail("a " + std::string(object.type_name()) + " has no method '" + name + "'");
}

}  // namespace fusor::text::jinja
