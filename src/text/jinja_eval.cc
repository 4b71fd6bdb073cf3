#include "text/jinja_eval.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "text/jinja_builtins.h"
#include "text/jinja_percent_format.h"

namespace fusor::text::jinja {
namespace {

// Loop iterations one render may run, all loops together: real templates run one per message.
constexpr size_t kMaxIterations = size_t(1) << 18;
// Macro calls nested in one another (a macro calling itself walks a JSON schema's levels): each
// takes stack, so a hostile template recursing forever fails here instead.
constexpr int kMaxMacroDepth = 100;

[[noreturn]] void fail(const std::string& message) { throw EvalError(message); }

std::string operand_types(const std::string& op, const Value& a, const Value& b) {
  return "unsupported operand types for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'";
}

Value checked_int(bool overflow, int64_t v) {
  if (overflow) fail("integer overflow");
  return Value::integer(v);
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  using K = Value::Kind;
  if (op == "+") {
    if (a.is(K::String) && b.is(K::String)) {
      if (a.as_string().size() + b.as_string().size() > kMaxValueSize) fail("string too large");
      return Value::string(a.as_string() + b.as_string());
    }
    if (a.is(K::List) && b.is(K::List)) {
      if (a.as_list().size() + b.as_list().size() > kMaxValueSize) fail("list too large");
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value::list(std::move(out));
    }
  }
  if (op == "*" && (a.is(K::String) || a.is(K::List) || b.is(K::String) || b.is(K::List))) {
    const Value& seq = a.is(K::String) || a.is(K::List) ? a : b;
    const Value& count = &seq == &a ? b : a;
    if (count.is(K::Int) || count.is(K::Bool)) {
      int64_t n = std::max<int64_t>(count.as_int(), 0);
      size_t unit = seq.is(K::String) ? seq.as_string().size() : seq.as_list().size();
      if (unit && uint64_t(n) > kMaxValueSize / unit) fail("repetition too large");
      if (seq.is(K::String)) {
        std::string out;
        for (int64_t k = 0; k < n; ++k) out += seq.as_string();
        return Value::string(out);
      }
      List out;
      for (int64_t k = 0; k < n; ++k) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
      return Value::list(std::move(out));
    }
  }
  if (!a.is_number() || !b.is_number()) fail(operand_types(op, a, b));
  bool floats = a.is(K::Float) || b.is(K::Float);
  if (op == "/") {
    if (b.as_float() == 0) fail("division by zero");
    return Value::number(a.as_float() / b.as_float());
  }
  if (floats) {
    double x = a.as_float(), y = b.as_float();
    if (op == "+") return Value::number(x + y);
    if (op == "-") return Value::number(x - y);
    if (op == "*") return Value::number(x * y);
    if (op == "**") return Value::number(std::pow(x, y));
    if (y == 0) fail("division by zero");
    if (op == "//") return Value::number(std::floor(x / y));
    double r = std::fmod(x, y);  // Python's %: the sign of the divisor
    if (r != 0 && (r < 0) != (y < 0)) r += y;
    return Value::number(r);
  }
  int64_t x = a.as_int(), y = b.as_int(), r = 0;
  bool overflow = false;  // computed before checked_int reads r: argument order is unspecified
  if (op == "+") return overflow = __builtin_add_overflow(x, y, &r), checked_int(overflow, r);
  if (op == "-") return overflow = __builtin_sub_overflow(x, y, &r), checked_int(overflow, r);
  if (op == "*") return overflow = __builtin_mul_overflow(x, y, &r), checked_int(overflow, r);
  if (op == "**") {
    if (y < 0) return Value::number(std::pow(double(x), double(y)));
    int64_t result = 1;
    for (int64_t k = 0; k < y; ++k) {
      if (__builtin_mul_overflow(result, x, &result)) fail("integer overflow");
      if (result == 0 || result == 1) break;
      if (result == -1) return Value::integer((y - k - 1) % 2 ? -result : result);
    }
    return Value::integer(result);
  }
  if (y == 0) fail(op == "%" ? "modulo by zero" : "division by zero");
  if (y == -1) return op == "%" ? Value::integer(0) : checked_int(x == INT64_MIN, -x);
  int64_t q = x / y, m = x % y;
  if (m != 0 && (m < 0) != (y < 0)) --q, m += y;  // floor, as Python does
  return Value::integer(op == "//" ? q : m);
}

Value binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string s = a.str() + b.str();
    if (s.size() > kMaxValueSize) fail("string too large");
    return Value::string(std::move(s));
  }
  if (op == "%" && a.is(Value::Kind::String)) return Value::string(percent_format(a.as_string(), b));
  if (op == "==") return Value::boolean(equal(a, b));
  if (op == "!=") return Value::boolean(!equal(a, b));
  if (op == "in") return Value::boolean(contains(a, b));
  if (op == "not in") return Value::boolean(!contains(a, b));
  if (op == "<" || op == ">" || op == "<=" || op == ">=") {
    int c = compare(a, b);
    if (c == 2) fail("'" + op + "' not supported between '" + a.type_name() + "' and '" + b.type_name() + "'");
    return Value::boolean(op == "<" ? c < 0 : op == ">" ? c > 0 : op == "<=" ? c <= 0 : c >= 0);
  }
  return arithmetic(op, a, b);
}

// Python's slice.indices(): the start, stop and step a slice of `length` items walks.
void slice_bounds(int64_t length, const Value* start, const Value* stop, const Value* step, int64_t& b, int64_t& e,
                  int64_t& s) {
  auto as_index = [](const Value* v, const char* what) -> const Value* {
    if (!v || v->is(Value::Kind::None)) return nullptr;
    if (!v->is(Value::Kind::Int) && !v->is(Value::Kind::Bool)) fail(std::string("slice ") + what + " must be an int");
    return v;
  };
  start = as_index(start, "start"), stop = as_index(stop, "stop"), step = as_index(step, "step");
  s = step ? step->as_int() : 1;
  if (s == 0) fail("slice step cannot be zero");
  if (s == INT64_MIN) s = -INT64_MAX;
  auto clamp = [&](const Value* v, int64_t fallback) {
    if (!v) return fallback;
    int64_t i = v->as_int();
    if (i < 0) i = i < -length ? (s < 0 ? -1 : 0) : i + length;
    else if (i >= length) i = s < 0 ? length - 1 : length;
    return i;
  };
  b = clamp(start, s < 0 ? length - 1 : 0);
  e = clamp(stop, s < 0 ? -1 : length);
}

Value slice(const Value& v, const Value* start, const Value* stop, const Value* step) {
  using K = Value::Kind;
  if (!v.is(K::List) && !v.is(K::String)) fail(std::string("a '") + v.type_name() + "' cannot be sliced");
  std::vector<size_t> at;
  int64_t length = v.is(K::List) ? int64_t(v.as_list().size()) : int64_t((at = char_offsets(v.as_string())).size() - 1);
  int64_t b, e, s;
  slice_bounds(length, start, stop, step, b, e, s);
  List items;
  std::string text;
  for (int64_t i = b; s > 0 ? i < e : i > e; i += s) {
    if (v.is(K::List)) items.push_back(v.as_list()[size_t(i)]);
    else text += v.as_string().substr(at[size_t(i)], at[size_t(i) + 1] - at[size_t(i)]);
    if ((s > 0 && i > INT64_MAX - s) || (s < 0 && i < INT64_MIN - s)) break;
  }
  if (v.is_tuple()) return Value::tuple(std::move(items));
  return v.is(K::List) ? Value::list(std::move(items)) : Value::string(std::move(text));
}

Value item(const Value& v, const Value& key) {
  using K = Value::Kind;
  if (v.is_undefined()) fail("cannot index an undefined value");
  if (v.is_mapping()) {
    const Value* found = key.is(K::String) ? v.find(key.as_string()) : nullptr;
    return found ? *found : Value();
  }
  if ((v.is(K::List) || v.is(K::String)) && (key.is(K::Int) || key.is(K::Bool))) {
    std::vector<size_t> at;
    int64_t length = v.is(K::List) ? int64_t(v.as_list().size()) : int64_t((at = char_offsets(v.as_string())).size() - 1);
    int64_t i = key.as_int();
    if (i < 0) i += length;
    if (i < 0 || i >= length) return Value();
    if (v.is(K::List)) return v.as_list()[size_t(i)];
    return Value::string(v.as_string().substr(at[size_t(i)], at[size_t(i) + 1] - at[size_t(i)]));
  }
  return Value();
}

// Puts `value` in `slot` for its lifetime, then the old value back, an exception leaving or not.
template <class T>
class Swapped {
 public:
  Swapped(T& slot, T value) : slot_(slot), saved_(std::move(value)) { std::swap(slot_, saved_); }
  ~Swapped() { std::swap(slot_, saved_); }
  Swapped(const Swapped&) = delete;
  Swapped& operator=(const Swapped&) = delete;

 private:
  T& slot_;
  T saved_;
};

// {% break %} (leave) and {% continue %}, thrown to the for loop around them.
struct LoopControl {
  bool leave;
};

class Renderer {
 public:
  explicit Renderer(const Dict& globals) {
    scopes_.emplace_back();
    for (const auto& [k, v] : globals) scopes_.back()[k] = v;
  }

  void run(const Body& body) {
    for (const Node& n : body) statement(n);
  }
  std::string take() { return std::move(out_); }

 private:
  void statement(const Node& n) {
    try {
      switch (n.kind) {
        case Node::Kind::Text: emit(n.text); return;
        case Node::Kind::Output: emit(eval(*n.expr).str()); return;
        case Node::Kind::If:
          for (size_t k = 0; k < n.conditions.size(); ++k)
            if (eval(*n.conditions[k]).truthy()) return run(n.bodies[k]);
          if (n.bodies.size() > n.conditions.size()) run(n.bodies.back());
          return;
        case Node::Kind::For: return for_loop(n);
        case Node::Kind::Set: return set(n);
        case Node::Kind::Macro: macros_[n.targets[0]] = &n; return;
        case Node::Kind::Break: throw LoopControl{true};
        case Node::Kind::Continue: throw LoopControl{false};
      }
    } catch (const EvalError& e) {
      throw RenderError{line_, e.what()};
    }
  }

  void emit(const std::string& s) {
    if (out_.size() + s.size() > kMaxValueSize) fail("the rendered prompt is too large");
    out_ += s;
  }

  // The text `body` renders to, written nowhere else: a {% set %} block's value, a macro's result.
  std::string capture(const Body& body) {
    const Swapped<std::string> fresh(out_, {});
    run(body);
    return std::move(out_);  // taken before the outer text comes back
  }

  void set(const Node& n) {
    line_ = n.line;
    Value v = n.expr ? eval(*n.expr) : Value::string(capture(n.bodies[0]));
    line_ = n.line;
    if (n.attribute.empty()) {
      scopes_.back()[n.targets[0]] = std::move(v);
      return;
    }
    const Value* target = lookup(n.targets[0]);
    if (!target || !target->is(Value::Kind::Namespace))
      fail("cannot set attribute '" + n.attribute + "' of '" + n.targets[0] + "', which is not a namespace()");
    target->set_attribute(n.attribute, std::move(v));
  }

  void for_loop(const Node& n) {
    line_ = n.line;
    Value iterable = eval(*n.expr);
    line_ = n.line;
    List items;
    if (iterable.is(Value::Kind::List)) {
      items = iterable.as_list();
    } else {
      Args no_args;
      items = apply_filter("list", iterable, no_args).as_list();
    }
    if (n.condition) {  // `for x in xs if c`: the loop sees only the items that pass
      List kept;
      for (const Value& v : items) {
        scopes_.emplace_back();
        bind(n, v);
        bool keep = eval(*n.condition).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(v);
      }
      items = std::move(kept);
    }
    if (items.empty()) {
      if (n.bodies.size() > 1) run(n.bodies[1]);
      return;
    }
    const int64_t length = int64_t(items.size());
    for (int64_t i = 0; i < length; ++i) {
      if (++iterations_ > kMaxIterations) fail("too many loop iterations");
      scopes_.emplace_back();
      bind(n, items[size_t(i)]);
      Dict loop = {{"index", Value::integer(i + 1)},          {"index0", Value::integer(i)},
                   {"revindex", Value::integer(length - i)},  {"revindex0", Value::integer(length - i - 1)},
                   {"first", Value::boolean(i == 0)},         {"last", Value::boolean(i == length - 1)},
                   {"length", Value::integer(length)}};
      if (i > 0) loop.emplace_back("previtem", items[size_t(i - 1)]);
      if (i + 1 < length) loop.emplace_back("nextitem", items[size_t(i + 1)]);
      scopes_.back()["loop"] = Value::dict(std::move(loop));
      try {
        run(n.bodies[0]);
      } catch (const LoopControl& control) {
        scopes_.pop_back();
        if (control.leave) return;
        continue;
      } catch (...) {
        scopes_.pop_back();
        throw;
      }
      scopes_.pop_back();
    }
  }

  void bind(const Node& n, const Value& v) {
    if (n.targets.size() == 1) {
      scopes_.back()[n.targets[0]] = v;
      return;
    }
    if (!v.is(Value::Kind::List) || v.as_list().size() != n.targets.size())
      fail("cannot unpack a " + std::string(v.type_name()) + " into " + std::to_string(n.targets.size()) + " loop variables");
    for (size_t k = 0; k < n.targets.size(); ++k) scopes_.back()[n.targets[k]] = v.as_list()[k];
  }

  const Value* lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return &found->second;
    }
    return nullptr;
  }

  Args arguments(const Expr& e, size_t first) {
    Args args;
    for (size_t k = first; k < e.items.size(); ++k) args.values.push_back(eval(*e.items[k]));
    args.keywords = e.keywords;
    return args;
  }

  Value eval(const Expr& e) {
    line_ = e.line;
    using K = Expr::Kind;
    switch (e.kind) {
      case K::Literal: return e.value;
      case K::Name: {
        const Value* v = lookup(e.name);
        // A global function named bare is defined, as in Jinja: `strftime_now is defined` guards
        // its call in Llama 3.2's template.
        if (!v && is_function(e.name)) return Value::string("<function " + e.name + ">");
        if (!v && macros_.count(e.name)) return Value::string("<Macro '" + e.name + "'>");
        return v ? *v : Value();
      }
      case K::List: {
        List items;
        for (const auto& item : e.items) items.push_back(eval(*item));
        return e.name == "tuple" ? Value::tuple(std::move(items)) : Value::list(std::move(items));
      }
      case K::Dict: {
        Dict entries;
        for (size_t k = 0; k + 1 < e.items.size(); k += 2) {
          Value key = eval(*e.items[k]);
          if (!key.is(Value::Kind::String)) fail("dict keys must be strings");
          Value value = eval(*e.items[k + 1]);
          bool replaced = false;
          for (auto& [existing, old] : entries)
            if (existing == key.as_string()) old = value, replaced = true;
          if (!replaced) entries.emplace_back(key.as_string(), std::move(value));
        }
        return Value::dict(std::move(entries));
      }
      case K::Attribute: {
        Value object = eval(*e.items[0]);
        line_ = e.line;
        if (object.is_undefined()) fail("cannot read attribute '" + e.name + "' of an undefined value");
        const Value* found = object.find(e.name);
        return found ? *found : Value();
      }
      case K::Item: {
        Value object = eval(*e.items[0]);
        Value key = eval(*e.items[1]);
        line_ = e.line;
        return item(object, key);
      }
      case K::Slice: {
        Value object = eval(*e.items[0]);
        Value bounds[3];
        for (int k = 0; k < 3; ++k)
          if (e.items[k + 1]) bounds[k] = eval(*e.items[k + 1]);
        line_ = e.line;
        auto ptr = [&](int k) { return e.items[k + 1] ? &bounds[k] : nullptr; };
        return slice(object, ptr(0), ptr(1), ptr(2));
      }
      case K::Call: {
        Args args = arguments(e, 0);
        line_ = e.line;
        if (auto macro = macros_.find(e.name); macro != macros_.end()) return call_macro(*macro->second, args);
        if (!is_function(e.name)) fail("'" + e.name + "' is undefined");  // its {% macro %} has not run
        return call_function(e.name, args);
      }
      case K::MethodCall: {
        Value object = eval(*e.items[0]);
        Args args = arguments(e, 1);
        line_ = e.line;
        if (object.is_undefined()) fail("cannot call '" + e.name + "' on an undefined value");
        return call_method(object, e.name, args);
      }
      case K::Filter: {
        Value operand = eval(*e.items[0]);
        Args args = arguments(e, 1);
        line_ = e.line;
        return apply_filter(e.name, operand, args);
      }
      case K::Test: {
        Value operand = eval(*e.items[0]);
        Args args = arguments(e, 1);
        line_ = e.line;
        return Value::boolean(apply_test(e.name, operand, args) != e.negated);
      }
      case K::Not: return Value::boolean(!eval(*e.items[0]).truthy());
      case K::Negate: {
        Value v = eval(*e.items[0]);
        line_ = e.line;
        if (v.is(Value::Kind::Float)) return Value::number(-v.as_float());
        if (!v.is_number()) fail(std::string("bad operand type for unary -: '") + v.type_name() + "'");
        return checked_int(v.as_int() == INT64_MIN, -v.as_int());
      }
      case K::And: {
        Value left = eval(*e.items[0]);
        return left.truthy() ? eval(*e.items[1]) : left;
      }
      case K::Or: {
        Value left = eval(*e.items[0]);
        return left.truthy() ? left : eval(*e.items[1]);
      }
      case K::Conditional:
        if (eval(*e.items[1]).truthy()) return eval(*e.items[0]);
        return e.items[2] ? eval(*e.items[2]) : Value();
      case K::Binary: {
        Value a = eval(*e.items[0]);
        Value b = eval(*e.items[1]);
        line_ = e.line;
        return binary(e.name, a, b);
      }
    }
    return Value();
  }

  // A macro's text for `args`, as jinja2 binds them: positional arguments in order, keywords by
  // name, a parameter given neither takes its default (evaluated now, seeing the earlier ones) or
  // stays undefined. The body sees the template's top-level variables and its parameters; what it
  // sets stays inside the call.
  Value call_macro(const Node& macro, const Args& args) {
    const std::string& name = macro.targets[0];
    const size_t params = macro.targets.size() - 1;
    if (args.positional() > params)
      fail("macro '" + name + "' takes not more than " + std::to_string(params) + " argument(s)");
    if (macro_depth_ >= kMaxMacroDepth) fail("macro calls nested too deeply");
    const Swapped<std::vector<std::map<std::string, Value>>> scope(scopes_, {scopes_.front(), {}});
    const Swapped<int> depth(macro_depth_, macro_depth_ + 1);
    for (size_t k = 0; k < args.keywords.size(); ++k) {
      const auto param = std::find(macro.targets.begin() + 1, macro.targets.end(), args.keywords[k]);
      if (param == macro.targets.end()) fail("macro '" + name + "' takes no keyword argument '" + args.keywords[k] + "'");
      if (size_t(param - macro.targets.begin()) <= args.positional())
        fail("macro '" + name + "' got multiple values for argument '" + args.keywords[k] + "'");
      scopes_.back()[*param] = args.values[args.positional() + k];
    }
    for (size_t k = 0; k < params; ++k) {
      const std::string& param = macro.targets[k + 1];
      if (k < args.positional()) scopes_.back()[param] = args.values[k];
      else if (!scopes_.back().count(param))  // undefined, not a top-level variable of that name
        scopes_.back()[param] = macro.conditions[k] ? eval(*macro.conditions[k]) : Value();
    }
    return Value::string(capture(macro.bodies[0]));
  }

  std::vector<std::map<std::string, Value>> scopes_;
  std::map<std::string, const Node*> macros_;  // those whose {% macro %} has run
  int macro_depth_ = 0;
  std::string out_;
  size_t iterations_ = 0;
  int line_ = 1;  // the line of the expression being evaluated, for errors
};

}  // namespace

std::string render(const Body& body, const Dict& globals) {
  BuildBudget budget;
  Renderer r(globals);
  try {
    r.run(body);
  } catch (const EvalError& e) {  // raised outside any statement's own handler
    throw RenderError{1, e.what()};
  }
  return r.take();
}

}  // namespace fusor::text::jinja
