#include "text/jinja_collection_filters.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace fusor::text::jinja {
namespace {

constexpr std::array<std::string_view, 6> kNames = {"sort", "dictsort", "unique", "min", "max", "sum"};

[[noreturn]] void fail(const std::string& message) { throw EvalError(message); }

// What an item is compared by: its attribute (a comma-separated list of them gives a tuple, as
// jinja2's sort reads `attribute='a,b'`), lower-cased where it is a string and case does not count.
class SortKey {
 public:
  SortKey(const Value* case_sensitive, const Value* attribute, const std::string& what, bool several_attributes)
      : what_(what), case_sensitive_(case_sensitive && case_sensitive->truthy()) {
    if (const Value* a = attribute; a && !a->is(Value::Kind::None)) {
      if (!a->is(Value::Kind::String)) {
        attributes_.push_back(*a);
      } else {
        const std::string& path = a->as_string();
        for (size_t start = 0;;) {
          const size_t comma = several_attributes ? path.find(',', start) : std::string::npos;
          std::string part = path.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
          part.erase(0, part.find_first_not_of(' '));
          part.erase(part.find_last_not_of(' ') + 1);
          attributes_.push_back(Value::string(part));
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      }
    }
  }

  Value of(const Value& item) const {
    if (attributes_.empty()) return folded(item);
    if (attributes_.size() == 1) return folded(attribute_of(item, attributes_[0], what_));
    List parts;
    for (const Value& a : attributes_) parts.push_back(folded(attribute_of(item, a, what_)));
    return Value::tuple(std::move(parts));
  }

  // Python's a < b, refusing what Python cannot order.
  bool less(const Value& a, const Value& b) const {
    const int c = compare(a, b);
    if (c == 2) fail(what_ + ": '<' not supported between '" + a.type_name() + "' and '" + b.type_name() + "'");
    return c < 0;
  }

 private:
  Value folded(const Value& v) const {
    if (case_sensitive_ || !v.is(Value::Kind::String)) return v;
    std::string s = v.as_string();
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return Value::string(std::move(s));
  }

  std::string what_;
  bool case_sensitive_ = false;
  List attributes_;
};

// An argument given by position or keyword (the operand is not counted).
bool flag(const Args& args, size_t index, std::string_view name) {
  const Value* v = args.get(index, name);
  return v && v->truthy();
}

Value sorted(const Value& v, const Args& args, const std::string& what) {
  // sort(reverse=False, case_sensitive=False, attribute=None)
  const SortKey key(args.get(1, "case_sensitive"), args.get(2, "attribute"), what, true);
  const bool reverse = flag(args, 0, "reverse");
  List items = items_of(v, what);
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : items) keyed.emplace_back(key.of(item), std::move(item));
  // Python's sorted(reverse=True) keeps equal items in their order, as a reversed comparison does.
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    return reverse ? key.less(b.first, a.first) : key.less(a.first, b.first);
  });
  List out;
  for (auto& [k, item] : keyed) out.push_back(std::move(item));
  return Value::list(std::move(out));
}

Value dictsort(const Value& v, const Args& args, const std::string& what) {
  // dictsort(case_sensitive=False, by='key', reverse=False)
  if (!v.is(Value::Kind::Dict)) fail(what + ": expected a dict, got " + v.type_name());
  const SortKey key(args.get(0, "case_sensitive"), nullptr, what, false);
  const Value* by = args.get(1, "by");
  const std::string by_name = by ? by->str() : "key";
  if (by_name != "key" && by_name != "value") fail(what + ": You can only sort by either \"key\" or \"value\"");
  const bool by_value = by_name == "value", reverse = flag(args, 2, "reverse");
  List pairs;
  for (const auto& [k, val] : v.as_dict()) pairs.push_back(Value::tuple({Value::string(k), val}));
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& a, const Value& b) {
    const Value ka = key.of(a.as_list()[by_value]), kb = key.of(b.as_list()[by_value]);
    return reverse ? key.less(kb, ka) : key.less(ka, kb);
  });
  return Value::list(std::move(pairs));
}

// unique, min, max: (case_sensitive=False, attribute=None).
Value picked(const std::string& name, const Value& v, const Args& args, const std::string& what) {
  const SortKey key(args.get(0, "case_sensitive"), args.get(1, "attribute"), what, false);
  List items = items_of(v, what);
  if (name == "unique") {
    List out, seen;
    for (const Value& item : items) {
      Value k = key.of(item);
      if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equal(s, k); })) continue;
      seen.push_back(std::move(k));
      out.push_back(item);
    }
    return Value::list(std::move(out));
  }
  if (items.empty()) return Value();  // jinja2: undefined, "No aggregated item, sequence was empty."
  size_t best = 0;
  Value best_key = key.of(items[0]);
  for (size_t k = 1; k < items.size(); ++k) {
    Value candidate = key.of(items[k]);
    // The first of equal items wins, as Python's min and max keep it.
    if (name == "min" ? key.less(candidate, best_key) : key.less(best_key, candidate)) best = k, best_key = candidate;
  }
  return items[best];
}

// sum(attribute=None, start=0): numbers add up, lists join, as Python's sum does.
Value summed(const Value& v, const Args& args, const std::string& what) {
  const Value* attribute = args.get(0, "attribute");
  const Value* start = args.get(1, "start");
  Value total = start ? *start : Value::integer(0);
  for (const Value& item : items_of(v, what)) {
    const Value x = attribute && !attribute->is(Value::Kind::None) ? attribute_of(item, *attribute, what) : item;
    if (total.is(Value::Kind::List) && x.is(Value::Kind::List)) {
      List joined = total.as_list();
      if (joined.size() + x.as_list().size() > kMaxValueSize) fail(what + ": list too large");
      joined.insert(joined.end(), x.as_list().begin(), x.as_list().end());
      total = Value::list(std::move(joined));
    } else if (total.is_number() && x.is_number()) {
      int64_t r = 0;
      if (total.is(Value::Kind::Float) || x.is(Value::Kind::Float)) total = Value::number(total.as_float() + x.as_float());
      else if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) fail(what + ": integer overflow");
      else total = Value::integer(r);
    } else {
      fail(what + ": unsupported operand types for +: '" + total.type_name() + "' and '" + x.type_name() + "'");
    }
  }
  return total;
}

}  // namespace

bool is_collection_filter(std::string_view name) { return std::find(kNames.begin(), kNames.end(), name) != kNames.end(); }

Value apply_collection_filter(const std::string& name, const Value& v, const Args& args) {
  const std::string what = "filter '" + name + "'";
  if (name == "sort") return sorted(v, args, what);
  if (name == "dictsort") return dictsort(v, args, what);
  if (name == "sum") return summed(v, args, what);
  return picked(name, v, args, what);
}

}  // namespace fusor::text::jinja
