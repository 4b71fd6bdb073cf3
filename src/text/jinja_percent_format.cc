#include "text/jinja_percent_format.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "text/jinja_builtins.h"

namespace fusor::text::jinja {
namespace {

[[noreturn]] void fail(const std::string& message) { throw EvalError(message); }

struct Spec {
  std::string flags;
  int width = -1, precision = -1;
  char conversion = 's';
};

// The arguments in order, or one dict of them.
class Arguments {
 public:
  explicit Arguments(const Value& values) {
    if (values.is_tuple()) items_ = values.as_list();
    else if (values.is(Value::Kind::Dict)) mapping_ = &values;
    else items_ = {values};
    single_ = !values.is_tuple() && !mapping_;
  }
  const Value& next() {
    if (mapping_ && !single_) return *mapping_;  // %s of a dict prints the dict
    if (used_ >= items_.size()) fail("not enough arguments for format string");
    return items_[used_++];
  }
  const Value& named(const std::string& key) {
    if (!mapping_) fail("format requires a mapping");
    const Value* v = mapping_->find(key);
    if (!v) fail("KeyError: '" + key + "'");
    return *v;
  }
  void check_all_used() const {
    if (!mapping_ && used_ < items_.size()) fail("not all arguments converted during string formatting");
  }

 private:
  List items_;
  const Value* mapping_ = nullptr;
  bool single_ = false;
  size_t used_ = 0;
};

int star(Arguments& args) {
  const Value& v = args.next();
  if (!v.is(Value::Kind::Int) && !v.is(Value::Kind::Bool)) fail("* wants int");
  return int(std::clamp<int64_t>(v.as_int(), -4096, 4096));
}

// Pads `text` (of `length` characters) to the spec's width.
std::string padded(std::string text, size_t length, const Spec& s) {
  if (s.width < 0 || length >= size_t(s.width)) return text;
  const std::string fill(size_t(s.width) - length, ' ');
  return s.flags.find('-') != std::string::npos ? text + fill : fill + text;
}

// printf into a string of whatever length it takes (a width or precision may be thousands).
template <class T>
std::string c_format(const std::string& spec, T value) {
  std::string out(size_t(std::snprintf(nullptr, 0, spec.c_str(), value)), '\0');
  std::snprintf(out.data(), out.size() + 1, spec.c_str(), value);
  return out;
}

std::string formatted_number(const Value& v, const Spec& s) {
  char c = s.conversion;
  const bool integer = c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o';
  if (!v.is_number()) fail(std::string("%") + c + " format: a real number is required, not " + v.type_name());
  std::string spec = "%" + s.flags;
  if (s.width >= 0) spec += std::to_string(s.width);
  if (s.precision >= 0) spec.append(".").append(std::to_string(s.precision));
  if (integer) {
    if (c == 'i' || c == 'u') c = 'd';
    const int64_t n = v.is(Value::Kind::Float) ? (std::isfinite(v.as_float()) ? int64_t(v.as_float()) : 0) : v.as_int();
    if (v.is(Value::Kind::Float) && !std::isfinite(v.as_float())) fail("cannot convert float infinity or NaN to integer");
    if (c == 'd') return c_format(spec + "lld", static_cast<long long>(n));
    // Python writes the sign, then 0x/0o with #, then the magnitude.
    const unsigned long long magnitude = n < 0 ? 0ull - static_cast<unsigned long long>(n) : static_cast<unsigned long long>(n);
    std::string digits_spec = "%";
    if (s.precision >= 0) digits_spec.append(".").append(std::to_string(s.precision));
    std::string body = c_format(digits_spec + "ll" + c, magnitude);
    if (s.flags.find('#') != std::string::npos) body = std::string(c == 'o' ? "0o" : c == 'x' ? "0x" : "0X").append(body);
    const std::string sign = n < 0 ? "-" : s.flags.find('+') != std::string::npos ? "+" : s.flags.find(' ') != std::string::npos ? " " : "";
    if (s.flags.find('0') != std::string::npos && s.flags.find('-') == std::string::npos && s.width > int(sign.size() + body.size())) {
      const size_t prefix = s.flags.find('#') != std::string::npos ? 2 : 0;
      body.insert(prefix, std::string(size_t(s.width) - sign.size() - body.size(), '0'));
    }
    return padded(sign + body, sign.size() + body.size(), s);
  }
  return c_format(spec + c, v.as_float());
}

}  // namespace

std::string percent_format(const std::string& format, const Value& values) {
  Arguments args(values);
  std::string out;
  for (size_t i = 0; i < format.size();) {
    if (format[i] != '%') {
      out += format[i++];
      continue;
    }
    if (++i >= format.size()) fail("incomplete format");
    Spec s;
    const Value* named = nullptr;
    if (format[i] == '(') {
      const size_t close = format.find(')', i);
      if (close == std::string::npos) fail("incomplete format key");
      named = &args.named(format.substr(i + 1, close - i - 1));
      i = close + 1;
    }
    while (i < format.size() && std::string_view("-+ #0").find(format[i]) != std::string_view::npos) s.flags += format[i++];
    if (i < format.size() && format[i] == '*') {
      s.width = star(args), ++i;
      if (s.width < 0) s.flags += '-', s.width = -s.width;
    } else {
      while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])) && s.width < 4096)
        s.width = std::max(s.width, 0) * 10 + (format[i++] - '0');
    }
    if (i < format.size() && format[i] == '.') {
      ++i;
      s.precision = 0;
      if (i < format.size() && format[i] == '*') s.precision = std::max(star(args), 0), ++i;
      else
        while (i < format.size() && std::isdigit(static_cast<unsigned char>(format[i])) && s.precision < 4096)
          s.precision = s.precision * 10 + (format[i++] - '0');
    }
    while (i < format.size() && (format[i] == 'h' || format[i] == 'l' || format[i] == 'L')) ++i;  // Python ignores them
    if (i >= format.size()) fail("incomplete format");
    s.conversion = format[i++];
    if (s.conversion == '%') {
      out += '%';
      continue;
    }
    const Value& v = named ? *named : args.next();
    std::string text;
    switch (s.conversion) {
      case 's':
      case 'r':
      case 'a': {
        text = s.conversion == 's' ? v.str() : v.repr();
        std::vector<size_t> at = char_offsets(text);
        size_t length = at.size() - 1;
        if (s.precision >= 0 && size_t(s.precision) < length) text.resize(at[size_t(s.precision)]), length = size_t(s.precision);
        text = padded(std::move(text), length, s);
        break;
      }
      case 'c': {
        if (v.is(Value::Kind::String) && char_offsets(v.as_string()).size() == 2) text = v.as_string();
        else if (v.is(Value::Kind::Int) && v.as_int() >= 0 && v.as_int() < 128) text = std::string(1, char(v.as_int()));
        else fail("%c requires an int in range(128) or a single character here");
        text = padded(std::move(text), 1, s);
        break;
      }
      case 'd': case 'i': case 'u': case 'x': case 'X': case 'o':
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G':
        text = formatted_number(v, s);
        break;
      default: fail(std::string("unsupported format character '") + s.conversion + "'");
    }
    out += text;
    if (out.size() > kMaxValueSize) fail("the formatted string is too large");
  }
  args.check_all_used();
  return out;
}

}  // namespace fusor::text::jinja
