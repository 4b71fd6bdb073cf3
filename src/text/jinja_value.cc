#include "text/jinja_value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace fusor::text::jinja {
namespace {

thread_local size_t built = 0;
thread_local bool counting = false;

void charge(size_t units) {
  if (!counting) return;
  built += units + 1;
  if (built > kMaxBuiltPerRender) throw EvalError("the template builds too much text");
}

void check_size(const std::string& s) {
  if (s.size() > kMaxValueSize) throw EvalError("a value's text is too large");
}

}  // namespace

BuildBudget::BuildBudget() { built = 0, counting = true; }
BuildBudget::~BuildBudget() { counting = false; }

Value Value::boolean(bool b) {
  Value v(Kind::Bool);
  v.b_ = b;
  return v;
}
Value Value::integer(int64_t i) {
  Value v(Kind::Int);
  v.i_ = i;
  return v;
}
Value Value::number(double f) {
  Value v(Kind::Float);
  v.f_ = f;
  return v;
}
Value Value::string(std::string s) {
  charge(s.size());
  Value v(Kind::String);
  v.s_ = std::move(s);
  return v;
}
// A string's bytes count each time a list or dict copies it: `l + [s]` in a loop copied a 60 MB
// string a hundred times (8 GB) while only the items were counted.
size_t shallow_bytes(const Value& v) { return v.is(Value::Kind::String) ? v.as_string().size() : 0; }

void Value::nest(const Value& item) {
  depth_ = std::max(depth_, item.depth_ + 1);
  holds_namespace_ = holds_namespace_ || item.holds_namespace();
  if (depth_ > kMaxValueDepth) throw EvalError("a list or dict nested too deeply");
}

Value Value::list(List items) {
  size_t bytes = 0;
  for (const Value& item : items) bytes += shallow_bytes(item);
  charge(items.size() + bytes);
  Value v(Kind::List);
  v.depth_ = 1;
  for (const Value& item : items) v.nest(item);
  v.list_ = std::make_shared<List>(std::move(items));
  return v;
}
Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.tuple_ = true;
  return v;
}
Value Value::dict(Dict items) {
  size_t bytes = 0;
  for (const auto& [key, item] : items) bytes += key.size() + shallow_bytes(item);
  charge(items.size() + bytes);
  Value v(Kind::Dict);
  v.depth_ = 1;
  for (const auto& [key, item] : items) v.nest(item);
  v.dict_ = std::make_shared<Dict>(std::move(items));
  return v;
}
Value Value::ns(Dict attributes) {
  Value v(Kind::Namespace);
  v.dict_ = std::make_shared<Dict>();
  for (auto& [name, item] : attributes) v.set_attribute(name, std::move(item));
  return v;
}

void Value::set_attribute(const std::string& name, Value value) const {
  if (value.holds_namespace()) throw EvalError("a namespace() cannot hold a namespace() ('" + name + "')");
  if (value.depth_ + 1 > kMaxValueDepth) throw EvalError("a list or dict nested too deeply");
  for (auto& [k, old] : *dict_)
    if (k == name) return void(old = std::move(value));
  dict_->emplace_back(name, std::move(value));
}

const Value* Value::find(const std::string& key) const {
  if (!is_mapping()) return nullptr;
  for (const auto& [k, v] : *dict_)
    if (k == key) return &v;
  return nullptr;
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b_;
    case Kind::Int: return i_ != 0;
    case Kind::Float: return f_ != 0;
    case Kind::String: return !s_.empty();
    case Kind::List: return !list_->empty();
    case Kind::Dict: return !dict_->empty();
    case Kind::Namespace: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::Undefined: return "undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "namespace";
  }
  return "?";
}

std::string float_repr(double f) {
  if (std::isnan(f)) return "nan";
  if (std::isinf(f)) return f < 0 ? "-inf" : "inf";
  // The shortest round-trip digits, then Python's layout: positional for exponents in
  // [-4, 16), scientific with a two-digit exponent otherwise, and always a ".0" or an exponent.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, f, std::chars_format::scientific);
  std::string sci(buf, end);
  size_t e = sci.find('e');
  std::string mantissa = sci.substr(0, e);
  int exponent = std::stoi(sci.substr(e + 1));
  bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out;
  if (exponent >= -4 && exponent < 16) {
    int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
      out = "0." + std::string(-point, '0') + digits;
    } else if (point >= int(digits.size())) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out.append(".").append(digits, 1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp;
  }
  if (negative) out.insert(out.begin(), '-');
  return out;
}

namespace {

std::string string_repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos, has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  return out + quote;
}

std::string dict_repr(const Dict& d) {
  std::string out = "{";
  for (size_t i = 0; i < d.size(); ++i) {
    out += (i ? ", " : "") + string_repr(d[i].first) + ": " + d[i].second.repr();
    check_size(out);
  }
  return out + "}";
}

}  // namespace

std::string Value::repr() const {
  switch (kind_) {
    case Kind::String: return string_repr(s_);
    case Kind::Undefined: return "";
    default: return str();
  }
}

std::string Value::str() const {
  switch (kind_) {
    case Kind::Undefined: return "";
    case Kind::None: return "None";
    case Kind::Bool: return b_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Float: return float_repr(f_);
    case Kind::String: return s_;
    case Kind::List: {
      std::string out = tuple_ ? "(" : "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        out += (i ? ", " : "") + (*list_)[i].repr();
        check_size(out);
      }
      if (tuple_ && list_->size() == 1) out += ",";
      return out + (tuple_ ? ")" : "]");
    }
    case Kind::Dict: return dict_repr(*dict_);
    case Kind::Namespace: return "<Namespace " + dict_repr(*dict_) + ">";
  }
  return "";
}

bool equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is(K::Float) || b.is(K::Float)) return a.as_float() == b.as_float();
    return a.as_int() == b.as_int();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.as_string() == b.as_string();
    case K::List:
      if (a.is_tuple() != b.is_tuple()) return false;
      return std::equal(a.as_list().begin(), a.as_list().end(), b.as_list().begin(), b.as_list().end(), equal);
    case K::Dict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [k, v] : a.as_dict()) {
        const Value* other = b.find(k);
        if (!other || !equal(v, *other)) return false;
      }
      return true;
    }
    case K::Namespace: return &a.namespace_attributes() == &b.namespace_attributes();
    default: return false;
  }
}

bool contains(const Value& item, const Value& container) {
  using K = Value::Kind;
  switch (container.kind()) {
    case K::List:
      for (const Value& v : container.as_list())
        if (equal(item, v)) return true;
      return false;
    case K::String:
      if (!item.is(K::String)) throw EvalError(std::string("'in <string>' requires a string, not '") + item.type_name() + "'");
      return container.as_string().find(item.as_string()) != std::string::npos;
    case K::Dict: return item.is(K::String) && container.find(item.as_string());
    case K::Undefined: return false;
    default: throw EvalError(std::string("a '") + container.type_name() + "' has no 'in'");
  }
}

int compare(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is(K::Float) || b.is(K::Float)) {
      double x = a.as_float(), y = b.as_float();
      return x < y ? -1 : x > y ? 1 : 0;  // NaN compares as neither: "equal" for <, > purposes
    }
    return a.as_int() < b.as_int() ? -1 : a.as_int() > b.as_int() ? 1 : 0;
  }
  if (a.is(K::String) && b.is(K::String)) {
    int c = a.as_string().compare(b.as_string());  // bytewise: code point order for UTF-8
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is(K::List) && b.is(K::List)) {
    const List &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equal(x[i], y[i])) continue;
      return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return 2;
}

namespace {

void json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  auto unicode = [&out](uint32_t u) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(u));
    out += buf;
  };
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    uint32_t cp = c;
    size_t len = 1;
    if (c >= 0x80) {  // decode one UTF-8 character; a malformed one reads as U+FFFD
      len = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
      bool ok = len > 1 && i + len <= s.size();
      cp = ok ? c & (0x7f >> len) : 0xfffd;
      for (size_t k = 1; ok && k < len; ++k) {
        unsigned char cc = s[i + k];
        if ((cc & 0xc0) != 0x80) ok = false;
        cp = (cp << 6) | (cc & 0x3f);
      }
      if (!ok || cp > 0x10ffff) cp = 0xfffd, len = ok ? len : 1;
    }
    i += len;
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (!ensure_ascii && cp >= 0x20) {  // as it is (a malformed byte as U+FFFD)
      if (cp == 0xfffd && !(len == 3 && s.compare(i - 3, 3, "\xef\xbf\xbd") == 0)) out += "\xef\xbf\xbd";
      else out.append(s, i - len, len);
    } else if (cp < 0x20 || (cp >= 0x7f && cp < 0x10000)) {
      unicode(cp);
    } else if (cp >= 0x10000) {  // a surrogate pair, as Python's ensure_ascii writes it
      cp -= 0x10000;
      unicode(0xd800 + (cp >> 10));
      unicode(0xdc00 + (cp & 0x3ff));
    } else {
      out += char(cp);
    }
  }
  out += '"';
}

void json_value(const Value& v, const JsonOptions& o, int depth, std::string& out) {
  using K = Value::Kind;
  if (depth > 256) throw EvalError("tojson: value nested too deeply");
  check_size(out);
  auto newline = [&](int d) {
    if (!o.indent) return;
    out += '\n';
    for (int k = 0; k < d; ++k) out += *o.indent;
  };
  const std::string& comma = o.item_separator ? *o.item_separator : o.indent ? std::string(",") : std::string(", ");
  switch (v.kind()) {
    case K::None: out += "null"; return;
    case K::Bool: out += v.as_bool() ? "true" : "false"; return;
    case K::Int: out += std::to_string(v.as_int()); return;
    case K::Float: {
      double f = v.as_float();
      out += std::isnan(f) ? "NaN" : std::isinf(f) ? (f < 0 ? "-Infinity" : "Infinity") : float_repr(f);
      return;
    }
    case K::String: json_string(v.as_string(), o.ensure_ascii, out); return;
    case K::List: {
      const List& items = v.as_list();
      if (items.empty()) return void(out += "[]");
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += comma;
        newline(depth + 1);
        json_value(items[i], o, depth + 1, out);
      }
      newline(depth);
      out += ']';
      return;
    }
    case K::Dict: {
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.as_dict()) entries.push_back(&e);
      if (o.sort_keys) std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      if (entries.empty()) return void(out += "{}");
      out += '{';
      for (size_t i = 0; i < entries.size(); ++i) {
        if (i) out += comma;
        newline(depth + 1);
        json_string(entries[i]->first, o.ensure_ascii, out);
        out += o.key_separator;
        json_value(entries[i]->second, o, depth + 1, out);
      }
      newline(depth);
      out += '}';
      return;
    }
    default: throw EvalError(std::string("tojson: a ") + v.type_name() + " value is not JSON serializable");
  }
}

}  // namespace

std::string to_json(const Value& v, const JsonOptions& options) {
  std::string out;
  json_value(v, options, 0, out);
  return out;
}

}  // namespace fusor::text::jinja
