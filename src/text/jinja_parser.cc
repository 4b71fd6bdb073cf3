#include "text/jinja_parser.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>

#include "text/jinja_builtins.h"
#include "text/jinja_lexer.h"

namespace fusor::text::jinja {
namespace {

// Deeper nesting than any real template, shallow enough that a hostile one cannot exhaust the stack.
constexpr int kMaxDepth = 64;
constexpr size_t kMaxExpressionTokens = 4096;

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// One tag's tokens. In a soft tag (one inside an if block, or its condition) an unknown filter
// or test fails only if it runs, as jinja2 compiles it; so does one inside `a if c else b`.
class ExpressionParser {
 public:
  ExpressionParser(std::vector<Token> tokens, bool soft) : t_(std::move(tokens)), soft_(soft) {
    // Chains (1 + 1 + ..., 'a' | upper | upper ...) nest one node per link without nesting
    // brackets, and evaluating (and freeing) a tree recurses once per level: two million links
    // overflowed the stack. A node takes at least one token, so this bounds the depth.
    if (t_.size() > kMaxExpressionTokens)
      throw SyntaxError{t_.front().line, "expression too long (over " + std::to_string(kMaxExpressionTokens) + " tokens)"};
  }

  const Token& peek(size_t ahead = 0) const { return t_[std::min(pos_ + ahead, t_.size() - 1)]; }
  bool at_op(const char* op, size_t ahead = 0) const { return peek(ahead).kind == Token::Kind::Op && peek(ahead).text == op; }
  bool at_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == name;
  }
  bool at_end() const { return peek().kind == Token::Kind::End; }
  const Token& next() { return t_[std::min(pos_++, t_.size() - 1)]; }
  [[noreturn]] void fail(const std::string& message) const { throw SyntaxError{peek().line, message}; }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Token::Kind::End: return "end of tag";
      case Token::Kind::String: return "a string";
      default: return "'" + t.text + "'";
    }
  }
  void expect_op(const char* op) {
    if (!at_op(op)) fail(std::string("expected '") + op + "', found " + describe(peek()));
    ++pos_;
  }
  std::string expect_name(const char* what) {
    if (peek().kind != Token::Kind::Name) fail(std::string("expected ") + what + ", found " + describe(peek()));
    return next().text;
  }
  void expect_end() {
    if (!at_end()) fail("unexpected " + describe(peek()));
  }

  void set_soft(bool soft) { soft_ = soft; }

  // expr := or ['if' or ['else' expr]]
  ExprPtr expression() {
    Depth guard(this);
    const size_t unknown_before = unknown_.size();
    ExprPtr value = or_expr();
    if (!at_name("if")) return refuse_unknown(std::move(value));
    unknown_.resize(unknown_before);  // a conditional expression is soft, its first part too
    const bool was_soft = soft_;
    soft_ = true;
    auto e = make(Expr::Kind::Conditional, next().line);
    e->items.push_back(std::move(value));
    e->items.push_back(or_expr());
    if (at_name("else")) {
      next();
      e->items.push_back(expression());
    } else {
      e->items.push_back(nullptr);
    }
    soft_ = was_soft;
    return e;
  }

  // A for loop's iterable: no `x if c else y` there, as the `if` filters the loop.
  ExprPtr expression_without_condition() {
    Depth guard(this);
    return refuse_unknown(or_expr());
  }

 private:
  struct Depth {
    explicit Depth(ExpressionParser* p) : p(p) {
      if (++p->depth_ > kMaxDepth) p->fail("expression nested too deeply");
    }
    ~Depth() { --p->depth_; }
    ExpressionParser* p;
  };

  ExprPtr binary(Expr::Kind kind, std::string op, ExprPtr left, ExprPtr right, int line) {
    auto e = make(kind, line);
    e->name = std::move(op);
    e->items.push_back(std::move(left));
    e->items.push_back(std::move(right));
    return e;
  }

  ExprPtr or_expr() {
    ExprPtr left = and_expr();
    while (at_name("or")) {
      int line = next().line;
      left = binary(Expr::Kind::Or, "or", std::move(left), and_expr(), line);
    }
    return left;
  }
  ExprPtr and_expr() {
    ExprPtr left = not_expr();
    while (at_name("and")) {
      int line = next().line;
      left = binary(Expr::Kind::And, "and", std::move(left), not_expr(), line);
    }
    return left;
  }
  ExprPtr not_expr() {
    if (!at_name("not")) return comparison();
    Depth guard(this);
    auto e = make(Expr::Kind::Not, next().line);
    e->items.push_back(not_expr());
    return e;
  }
  // a < b < c is (a < b) and (b < c); b is parsed once and copied, harmless without side effects.
  ExprPtr comparison() {
    ExprPtr left = additive();
    ExprPtr result;
    const Expr* last_right = nullptr;
    for (;;) {
      std::string op;
      int line = peek().line;
      if (peek().kind == Token::Kind::Op && (peek().text == "==" || peek().text == "!=" || peek().text == "<" ||
                                             peek().text == ">" || peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (at_name("in")) {
        next(), op = "in";
      } else if (at_name("not") && at_name("in", 1)) {
        next(), next(), op = "not in";
      } else {
        break;
      }
      ExprPtr lhs = last_right ? clone(*last_right) : std::move(left);
      ExprPtr cmp = binary(Expr::Kind::Binary, op, std::move(lhs), additive(), line);
      last_right = cmp->items[1].get();
      result = result ? binary(Expr::Kind::And, "and", std::move(result), std::move(cmp), line) : std::move(cmp);
    }
    return result ? std::move(result) : std::move(left);
  }
  ExprPtr clone(const Expr& e) {
    auto c = std::make_unique<Expr>();
    c->kind = e.kind, c->line = e.line, c->value = e.value, c->name = e.name, c->negated = e.negated;
    c->keywords = e.keywords;
    for (const auto& item : e.items) c->items.push_back(item ? clone(*item) : nullptr);
    return c;
  }
  ExprPtr additive() {
    ExprPtr left = concat();
    while (at_op("+") || at_op("-")) {
      const Token& op = next();
      left = binary(Expr::Kind::Binary, op.text, std::move(left), concat(), op.line);
    }
    return left;
  }
  ExprPtr concat() {
    ExprPtr left = multiplicative();
    while (at_op("~")) {
      int line = next().line;
      left = binary(Expr::Kind::Binary, "~", std::move(left), multiplicative(), line);
    }
    return left;
  }
  ExprPtr multiplicative() {
    ExprPtr left = power();
    while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
      const Token& op = next();
      left = binary(Expr::Kind::Binary, op.text, std::move(left), power(), op.line);
    }
    return left;
  }
  ExprPtr power() {
    ExprPtr left = unary(true);
    while (at_op("**")) {
      int line = next().line;
      left = binary(Expr::Kind::Binary, "**", std::move(left), unary(true), line);
    }
    return left;
  }
  ExprPtr unary(bool with_filters) {
    Depth guard(this);
    ExprPtr e;
    if (at_op("-") || at_op("+")) {
      const Token& op = next();
      ExprPtr operand = unary(false);
      if (op.text == "-") {
        e = make(Expr::Kind::Negate, op.line);
        e->items.push_back(std::move(operand));
      } else {
        e = std::move(operand);
      }
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    return with_filters ? filters(std::move(e)) : std::move(e);
  }
  ExprPtr primary() {
    const Token& t = next();
    switch (t.kind) {
      case Token::Kind::Name: {
        if (t.text == "true" || t.text == "True") return literal(Value::boolean(true), t.line);
        if (t.text == "false" || t.text == "False") return literal(Value::boolean(false), t.line);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), t.line);
        if (at_op("(")) {  // a macro, a global function, or (when it runs) an undefined name
          auto e = make(Expr::Kind::Call, t.line);
          e->name = t.text;
          arguments(*e);
          return e;
        }
        auto e = make(Expr::Kind::Name, t.line);
        e->name = t.text;
        return e;
      }
      case Token::Kind::String: {
        std::string s = t.text;
        while (peek().kind == Token::Kind::String) s += next().text;  // adjacent literals join
        return literal(Value::string(std::move(s)), t.line);
      }
      case Token::Kind::Int: {
        int64_t v = 0;
        auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
        if (ec != std::errc()) throw SyntaxError{t.line, "integer " + t.text + " is out of range"};
        return literal(Value::integer(v), t.line);
      }
      case Token::Kind::Float: return literal(Value::number(std::strtod(t.text.c_str(), nullptr)), t.line);
      case Token::Kind::Op:
        if (t.text == "(") {
          ExprPtr inner = expression();
          if (at_op(",")) {  // a tuple
            auto list = make(Expr::Kind::List, t.line);
            list->name = "tuple";
            list->items.push_back(std::move(inner));
            while (at_op(",") && (next(), !at_op(")"))) list->items.push_back(expression());
            inner = std::move(list);
          }
          expect_op(")");
          return inner;
        }
        if (t.text == "[") {
          auto list = make(Expr::Kind::List, t.line);
          while (!at_op("]")) {
            list->items.push_back(expression());
            if (!at_op(",")) break;
            next();
          }
          expect_op("]");
          return list;
        }
        if (t.text == "{") {
          auto dict = make(Expr::Kind::Dict, t.line);
          while (!at_op("}")) {
            dict->items.push_back(expression());
            expect_op(":");
            dict->items.push_back(expression());
            if (!at_op(",")) break;
            next();
          }
          expect_op("}");
          return dict;
        }
        [[fallthrough]];
      default: throw SyntaxError{t.line, "unexpected " + describe(t)};
    }
  }
  ExprPtr literal(Value v, int line) {
    auto e = make(Expr::Kind::Literal, line);
    e->value = std::move(v);
    return e;
  }
  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (at_op(".")) {
        int line = next().line;
        if (peek().kind == Token::Kind::Int) {  // x.0: jinja2 reads it as x[0]
          auto item = make(Expr::Kind::Item, line);
          item->items.push_back(std::move(e));
          item->items.push_back(primary());
          e = std::move(item);
          continue;
        }
        std::string name = expect_name("an attribute name");
        if (at_op("(")) {
          auto call = make(Expr::Kind::MethodCall, line);
          call->name = name;
          call->items.push_back(std::move(e));
          arguments(*call);
          e = std::move(call);
        } else {
          auto attr = make(Expr::Kind::Attribute, line);
          attr->name = name;
          attr->items.push_back(std::move(e));
          e = std::move(attr);
        }
      } else if (at_op("[")) {
        e = subscript(std::move(e));
      } else if (at_op("(")) {
        fail("only global functions and str or dict methods can be called");
      } else {
        return e;
      }
    }
  }
  ExprPtr subscript(ExprPtr object) {
    int line = next().line;  // '['
    ExprPtr parts[3];
    int colons = 0;
    for (;;) {
      if (at_op(":")) {
        if (++colons > 2) fail("unexpected ':'");
        next();
      } else if (at_op("]")) {
        break;
      } else {
        if (parts[colons]) fail("expected ']'");
        parts[colons] = expression();
      }
    }
    next();  // ']'
    if (colons == 0 && !parts[0]) throw SyntaxError{line, "empty subscript"};
    auto e = make(colons ? Expr::Kind::Slice : Expr::Kind::Item, line);
    e->items.push_back(std::move(object));
    for (int k = 0; k < (colons ? 3 : 1); ++k) e->items.push_back(std::move(parts[k]));
    return e;
  }
  // "(" [expr | name "=" expr] {"," ...} ")": positional arguments first, then keywords.
  void arguments(Expr& call) {
    expect_op("(");
    std::vector<ExprPtr> keyword_values;
    while (!at_op(")")) {
      if (peek().kind == Token::Kind::Name && at_op("=", 1)) {
        call.keywords.push_back(next().text);
        next();
        keyword_values.push_back(expression());
      } else {
        if (!call.keywords.empty()) fail("a positional argument after a keyword argument");
        call.items.push_back(expression());
      }
      if (!at_op(",")) break;
      next();
    }
    expect_op(")");
    for (auto& v : keyword_values) call.items.push_back(std::move(v));
  }
  ExprPtr filters(ExprPtr e) {
    for (;;) {
      if (at_op("|")) {
        next();
        const Token& name = peek();
        std::string filter = expect_name("a filter name");
        if (!is_filter(filter)) unknown(name.line, "unknown filter '" + filter + "'");
        auto f = make(Expr::Kind::Filter, name.line);
        f->name = filter;
        f->items.push_back(std::move(e));
        if (at_op("(")) arguments(*f);
        e = std::move(f);
      } else if (at_name("is")) {
        int line = next().line;
        auto test = make(Expr::Kind::Test, line);
        if (at_name("not")) next(), test->negated = true;
        std::string name = expect_name("a test name");
        if (!is_test(name)) unknown(line, "unknown test '" + name + "'");
        test->name = name;
        test->items.push_back(std::move(e));
        if (at_op("(")) {
          arguments(*test);
        } else if (at_bare_test_argument()) {  // `x is divisibleby 3`, `x is in [1, 2]`: one argument
          test->items.push_back(postfix(primary()));
        }
        e = std::move(test);
      } else {
        return e;
      }
    }
  }

  // Where jinja2 reads a test's one argument without brackets: a literal, name or display
  // next, but not the keywords that go on the expression.
  bool at_bare_test_argument() const {
    const Token& t = peek();
    if (t.kind == Token::Kind::Name) return t.text != "else" && t.text != "or" && t.text != "and" && t.text != "is";
    return t.kind == Token::Kind::String || t.kind == Token::Kind::Int || t.kind == Token::Kind::Float || at_op("[") ||
           at_op("{");
  }

  // An unknown filter or test: an error when the outermost expression ends, unless it is soft.
  void unknown(int line, std::string message) {
    if (!soft_) unknown_.push_back(SyntaxError{line, std::move(message)});
  }
  ExprPtr refuse_unknown(ExprPtr e) {
    if (depth_ == 1 && !unknown_.empty()) throw unknown_.front();
    return e;
  }

  std::vector<Token> t_;
  bool soft_;
  std::vector<SyntaxError> unknown_;
  size_t pos_ = 0;
  int depth_ = 0;
};

// The statements of a template, block by block.
class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Segment> segments) : s_(std::move(segments)) {}

  Body parse() {
    std::string stop;
    return block({}, stop, 0, {});
  }

 private:
  // Where a block is: directly in an if block (soft: unknown filters fail only when run), in a
  // for loop's body (break and continue allowed).
  struct Place {
    bool soft = false, in_loop = false;
  };

  // Statements until a tag named in `stops` (its name in `stop`, the parser left after it) or
  // the end (stop empty; an error if stops were expected).
  Body block(const std::vector<std::string>& stops, std::string& stop, int depth, Place place) {
    if (depth > kMaxDepth) throw SyntaxError{s_[std::min(i_, s_.size() - 1)].line, "blocks nested too deeply"};
    Body body;
    while (i_ < s_.size()) {
      const Segment& seg = s_[i_++];
      if (seg.kind == Segment::Kind::Text) {
        body.push_back(node(Node::Kind::Text, seg.line));
        body.back().text = seg.text;
        continue;
      }
      auto p = std::make_unique<ExpressionParser>(tokenize_expression(seg), place.soft);
      if (seg.kind == Segment::Kind::Output) {
        if (p->at_end()) throw SyntaxError{seg.line, "empty {{ }}"};
        Node n = node(Node::Kind::Output, seg.line);
        n.expr = p->expression();
        p->expect_end();
        body.push_back(std::move(n));
        continue;
      }
      std::string tag = p->expect_name("a tag name");
      for (const std::string& s : stops)
        if (tag == s) {
          stop = tag;
          current_ = std::move(p);
          return body;
        }
      if (tag == "if") {
        p->set_soft(true);
        body.push_back(if_block(*p, seg.line, depth, place));
      } else if (tag == "for") {
        body.push_back(for_block(*p, seg.line, depth));
      } else if (tag == "set") {
        body.push_back(set_statement(*p, seg.line, depth, place));
      } else if (tag == "macro") {
        body.push_back(macro_block(*p, seg.line, depth));
      } else if (tag == "break" || tag == "continue") {  // transformers' loopcontrols extension
        if (!place.in_loop) throw SyntaxError{seg.line, "'" + tag + "' outside a for loop"};
        p->expect_end();
        body.push_back(node(tag == "break" ? Node::Kind::Break : Node::Kind::Continue, seg.line));
      } else if (tag == "generation") {  // transformers' marker of assistant text: the text as it is
        p->expect_end();
        Body inner = block({"endgeneration"}, stop, depth + 1, place);
        current_->expect_end();
        for (Node& n : inner) body.push_back(std::move(n));
      } else if (tag == "elif" || tag == "else" || tag == "endif" || tag == "endfor" || tag == "endset" ||
                 tag == "endmacro" || tag == "endgeneration") {
        throw SyntaxError{seg.line, "unexpected '" + tag + "'"};
      } else {
        throw SyntaxError{seg.line, "unknown tag '" + tag + "'"};
      }
    }
    if (!stops.empty()) {
      int line = s_.empty() ? 1 : s_.back().line;
      throw SyntaxError{line, "missing '{% " + stops.back() + " %}'"};
    }
    return body;
  }

  static Node node(Node::Kind kind, int line) {
    Node n;
    n.kind = kind;
    n.line = line;
    return n;
  }

  Node if_block(ExpressionParser& p, int line, int depth, Place place) {
    Node n = node(Node::Kind::If, line);
    n.conditions.push_back(p.expression());
    p.expect_end();
    place.soft = true;
    for (;;) {
      std::string stop;
      n.bodies.push_back(block({"elif", "else", "endif"}, stop, depth + 1, place));
      ExpressionParser& tag = *current_;
      if (stop == "endif") {
        tag.expect_end();
        return n;
      }
      if (stop == "elif") {
        n.conditions.push_back(tag.expression());
        tag.expect_end();
        continue;
      }
      tag.expect_end();  // else
      n.bodies.push_back(block({"endif"}, stop, depth + 1, place));
      current_->expect_end();
      return n;
    }
  }

  Node for_block(ExpressionParser& p, int line, int depth) {
    Node n = node(Node::Kind::For, line);
    n.targets.push_back(p.expect_name("a loop variable"));
    while (p.at_op(",")) {
      p.next();
      n.targets.push_back(p.expect_name("a loop variable"));
    }
    if (!p.at_name("in")) p.fail("expected 'in' after the loop variables");
    p.next();
    n.expr = p.expression_without_condition();
    if (p.at_name("if")) {
      p.next();
      n.condition = p.expression();
    }
    if (p.at_name("recursive")) p.fail("recursive loops are not supported");
    p.expect_end();
    std::string stop;
    n.bodies.push_back(block({"else", "endfor"}, stop, depth + 1, {.soft = false, .in_loop = true}));
    current_->expect_end();
    if (stop == "else") {
      n.bodies.push_back(block({"endfor"}, stop, depth + 1, {}));
      current_->expect_end();
    }
    return n;
  }

  // {% set x = expr %}, {% set ns.x = expr %}, or the block {% set x %}text{% endset %}.
  Node set_statement(ExpressionParser& p, int line, int depth, Place place) {
    Node n = node(Node::Kind::Set, line);
    n.targets.push_back(p.expect_name("a variable name"));
    if (p.at_op(".")) {
      p.next();
      n.attribute = p.expect_name("an attribute name");
    }
    if (p.at_end() && n.attribute.empty()) {
      std::string stop;
      n.bodies.push_back(block({"endset"}, stop, depth + 1, place));
      current_->expect_end();
      return n;
    }
    if (!p.at_op("=")) p.fail("expected '=' in set");
    p.next();
    n.expr = p.expression();
    p.expect_end();
    return n;
  }

  // {% macro name(a, b=default) %}body{% endmacro %}: targets are the name then the parameters,
  // conditions their defaults (null where none).
  Node macro_block(ExpressionParser& p, int line, int depth) {
    Node n = node(Node::Kind::Macro, line);
    n.targets.push_back(p.expect_name("a macro name"));
    p.expect_op("(");
    while (!p.at_op(")")) {
      std::string param = p.expect_name("a parameter name");
      if (std::find(n.targets.begin() + 1, n.targets.end(), param) != n.targets.end())
        p.fail("parameter '" + param + "' given twice");
      n.targets.push_back(std::move(param));
      if (p.at_op("=")) {
        p.next();
        n.conditions.push_back(p.expression());
      } else {
        if (!n.conditions.empty() && n.conditions.back()) p.fail("a parameter without a default after one with");
        n.conditions.push_back(nullptr);
      }
      if (!p.at_op(",")) break;
      p.next();
    }
    p.expect_op(")");
    p.expect_end();
    std::string stop;
    n.bodies.push_back(block({"endmacro"}, stop, depth + 1, {}));
    if (!current_->at_end()) current_->expect_name("the macro's name");  // {% endmacro name %}
    current_->expect_end();
    return n;
  }

  std::vector<Segment> s_;
  size_t i_ = 0;
  std::unique_ptr<ExpressionParser> current_;  // the tag that ended the last block
};

}  // namespace

Body parse_template(std::string_view source) { return TemplateParser(split_template(source)).parse(); }

}  // namespace fusor::text::jinja
