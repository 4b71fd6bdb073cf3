// The parsed form of a chat template: expressions and statements, as the parser builds them and
// the renderer walks them. Every node keeps its template line for error messages.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "text/jinja_value.h"

namespace fusor::text::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,      // value
    Name,         // name
    List,         // items; name "tuple" for (a, b)
    Dict,         // items: key, value, key, value, ...
    Attribute,    // items[0].name
    Item,         // items[0][items[1]]
    Slice,        // items[0][items[1]:items[2]:items[3]] (each but the first may be null)
    Call,         // name(items...): a macro, else a global function (raise_exception, namespace, range, dict)
    MethodCall,   // items[0].name(items[1:]...): a str or dict method (strip, startswith, items, get)
    Filter,       // items[0] | name(items[1:]...)
    Test,         // items[0] is [not] name(items[1:]...)
    Not,          // not items[0]
    Negate,       // -items[0]
    Binary,       // items[0] op items[1]: + - * / // % ** ~ == != < <= > >= in "not in"
    And,          // items[0] and items[1]
    Or,           // items[0] or items[1]
    Conditional,  // items[0] if items[1] else items[2] (items[2] may be null)
  };
  Kind kind;
  int line;
  Value value;
  std::string name;  // a name, attribute, function, filter, test or operator
  bool negated = false;
  std::vector<ExprPtr> items;
  std::vector<std::string> keywords;  // calls: the names of the last keywords.size() arguments
};

struct Node;
using Body = std::vector<Node>;

struct Node {
  enum class Kind {
    Text,    // text
    Output,  // {{ expr }}
    If,      // conditions[i] -> bodies[i]; bodies[conditions.size()] (if there) is the else
    For,     // for targets in expr [if condition]: bodies[0]; bodies[1] (if there) when nothing looped
    Set,     // set targets[0] [. attribute] = expr, or (no expr) set targets[0] to bodies[0]'s text
    Macro,   // macro targets[0](targets[1:]): bodies[0]; conditions[i] the default of targets[i + 1] or null
    Break,   // {% break %}, in a for loop's body
    Continue,
  };
  Kind kind;
  int line;
  std::string text;
  ExprPtr expr;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  std::vector<std::string> targets;
  std::string attribute;  // set ns.attribute = ...
  ExprPtr condition;      // for ... if condition
};

}  // namespace fusor::text::jinja
