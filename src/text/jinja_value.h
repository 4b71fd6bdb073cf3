// The values a chat template computes with: the few Python types Jinja templates see (None,
// bool, int, float, str, list, dict) plus Jinja's Undefined and namespace(). Lists and dicts are
// shared, immutable once built (the sandbox transformers renders in forbids mutating them);
// only a namespace's attributes change, through `{% set ns.x = ... %}`.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fusor::text::jinja {

// A template that cannot be rendered (a type error, an undefined attribute): the renderer adds
// the template line and turns it into a fusor::Error.
struct EvalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Value;
using List = std::vector<Value>;
// Insertion-ordered string keys, as Python dicts built from JSON messages are.
using Dict = std::vector<std::pair<std::string, Value>>;

class Value {
 public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace };

  Value() = default;  // Undefined
  static Value none() { return Value(Kind::None); }
  static Value boolean(bool b);
  static Value integer(int64_t i);
  static Value number(double f);
  static Value string(std::string s);
  static Value list(List items);
  // A Python tuple: a list that prints as (a, b) and equals only tuples (dict.items() pairs).
  static Value tuple(List items);
  static Value dict(Dict items);
  static Value ns(Dict attributes);

  Kind kind() const { return kind_; }
  bool is(Kind k) const { return kind_ == k; }
  bool is_undefined() const { return kind_ == Kind::Undefined; }
  bool is_number() const { return kind_ == Kind::Bool || kind_ == Kind::Int || kind_ == Kind::Float; }
  bool is_mapping() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }
  bool is_tuple() const { return kind_ == Kind::List && tuple_; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::Bool ? int64_t(b_) : i_; }  // bool is an int, as in Python
  double as_float() const { return kind_ == Kind::Float ? f_ : double(as_int()); }
  const std::string& as_string() const { return s_; }
  const List& as_list() const { return *list_; }
  const Dict& as_dict() const { return *dict_; }
  // A namespace's attributes: the one mutable value. Set them through set_attribute.
  Dict& namespace_attributes() const { return *dict_; }
  // {% set ns.name = value %}: refuses a value holding a namespace (a namespace holding itself
  // would print, compare and free forever) or nested kMaxValueDepth deep.
  void set_attribute(const std::string& name, Value value) const;
  bool holds_namespace() const { return kind_ == Kind::Namespace || holds_namespace_; }

  // The entry for `key` in a dict or namespace, or nullptr.
  const Value* find(const std::string& key) const;

  bool truthy() const;
  // Python's str(): what `{{ }}` prints ("" for Undefined, "None", "True", "[1, 'a']").
  std::string str() const;
  // Python's repr(), as str() shows the items of a list or dict.
  std::string repr() const;
  // Python's type name, for error messages ("str", "list", "undefined").
  const char* type_name() const;

 private:
  explicit Value(Kind k) : kind_(k) {}
  Kind kind_ = Kind::Undefined;
  bool b_ = false;
  bool tuple_ = false;
  // Lists, dicts and namespaces: how deep they nest, and whether a namespace is inside (walking a
  // value, freeing it too, recurses once per level: see kMaxValueDepth).
  uint32_t depth_ = 0;
  bool holds_namespace_ = false;
  void nest(const Value& item);
  int64_t i_ = 0;
  double f_ = 0;
  std::string s_;
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
};

// The work one render may do, counted as bytes of strings plus items of lists it creates: a
// hostile template ('x' * 60000000 in a loop of 100000) fails fast instead of running for hours.
// While a BuildBudget lives, creating values past the budget throws EvalError; outside one
// (parsing, building the messages) nothing is counted. Per thread: a render runs on one.
constexpr size_t kMaxBuiltPerRender = size_t(1) << 28;
class BuildBudget {
 public:
  BuildBudget();
  ~BuildBudget();
  BuildBudget(const BuildBudget&) = delete;
  BuildBudget& operator=(const BuildBudget&) = delete;
};
// The largest string or list one operation may build (bytes or items).
constexpr size_t kMaxValueSize = size_t(1) << 26;
// How deeply lists and dicts may nest: printing, comparing and freeing a value recurse once per
// level, and a loop of `{% set x = [x] %}` built 200,000 levels (a stack overflow). Messages
// read from JSON nest at most 128 levels (io/json_depth.h), which this leaves room for.
constexpr uint32_t kMaxValueDepth = 160;

// Python's ==: numbers by value across bool/int/float, lists and dicts item by item.
bool equal(const Value& a, const Value& b);
// Python's `item in container` for a list, str or dict (Undefined holds nothing).
bool contains(const Value& item, const Value& container);
// Python's < for numbers, strings and lists; nullopt-like failure is reported by the caller.
// Returns -1, 0, 1, or 2 when Python would raise TypeError.
int compare(const Value& a, const Value& b);
// Python's float repr: the shortest digits that read back, "1.0", "1e+16", "1e-05".
std::string float_repr(double f);
// json.dumps(v, ...), as transformers' tojson filter writes it (it replaces Jinja's, which
// sorted keys and escaped <, >, & and ' for HTML): keys in their order unless sort_keys, non-ASCII
// as it is unless ensure_ascii, one line unless indent (a string repeated per level; Python's
// int indent is that many spaces), separators ", " (or "," when indented) and ": " unless given.
struct JsonOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;
  std::optional<std::string> item_separator;
  std::string key_separator = ": ";
  bool sort_keys = false;
};
std::string to_json(const Value& v, const JsonOptions& options);

}  // namespace fusor::text::jinja
