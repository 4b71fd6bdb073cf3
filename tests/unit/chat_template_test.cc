// Chat templates (include/fusor/chat_template.h): each construct of the Jinja subset on small
// templates whose output is written out by hand (as jinja2 renders them), the whitespace rules,
// errors naming the line, raise_exception, and tokenizer_config.json reading. Agreement with
// transformers on real templates is tests/e2e/test_chat_template.py's job.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <ctime>
#include <thread>
#include <unistd.h>

#include "fusor/chat_template.h"
#include "fusor/error.h"

namespace fusor {
namespace {

const std::vector<ChatMessage> kChat = {
    {"system", "Be brief.", ""}, {"user", " Hi ", ""}, {"assistant", "Hello!", ""}, {"user", "é 😀", ""}};

std::string render(const std::string& source, std::vector<ChatMessage> messages = kChat, bool generation = false) {
  return ChatTemplate::parse(source).with_token("bos_token", "<s>").with_token("eos_token", "</s>").apply(messages, generation);
}

// The error message a template gives, parsing or rendering.
std::string error_of(const std::string& source) {
  try {
    render(source);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument) << source;
    return e.what();
  }
  return "(no error)";
}

// The template's text, or its error: one failing case does not hide the others.
std::string rendered_or_error(const std::string& source) {
  try {
    return render(source);
  } catch (const Error& e) {
    return e.what();
  }
}

struct Case {
  const char* source;
  const char* expected;
};

TEST(ChatTemplate, EachConstructRendersAsJinja2Does) {
  const Case cases[] = {
      {"plain text", "plain text"},
      {"{{ bos_token }}{{ eos_token }}{{ messages | length }}", "<s></s>4"},
      {"{% for m in messages %}{{ m['role'][0] }}{{ m.role[-1] }},{% endfor %}", "sm,ur,at,ur,"},
      {"{% for m in messages %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "10TrueFalse4;21FalseFalse4;32FalseFalse4;43FalseTrue4;"},
      {"{% for m in messages[1:] %}{{ m.role }} {% endfor %}", "user assistant user "},
      {"{% for m in messages if m.role == 'user' %}{{ loop.index }}{{ m.content | trim }}{% endfor %}", "1Hi2é 😀"},
      {"{% for x in [] %}a{% else %}empty{% endfor %}", "empty"},
      {"{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}", "a=1;b=2;"},
      {"{% if messages[0].role == 'system' %}S{% elif false %}E{% else %}N{% endif %}", "S"},
      {"{% if not messages %}none{% elif messages | length > 3 %}many{% endif %}", "many"},
      {"{% set x = 1 %}{% for i in [1, 2] %}{{ x }}{% set x = x + i %}{{ x }},{% endfor %}{{ x }}", "12,13,1"},
      {"{% set ns = namespace(n=0) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}", "4"},
      {"{{ 7 / 2 }} {{ 7 // 2 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 'ab' * 2 }} {{ 1 + 2 * 3 - 4 }}", "3.5 3 2 1024 abab 3"},
      {"{{ 'a' ~ 1 ~ none ~ true }}{{ 'x' + 'y' }}{{ [1] + [2] }}", "a1NoneTruexy[1, 2]"},
      {"{{ 1 < 2 < 3 }}{{ 1 == 1.0 }}{{ 'a' in 'cat' }}{{ 2 not in [1] }}{{ 'b' >= 'a' }}{{ none is none }}",
       "TrueTrueTrueTrueTrueTrue"},
      {"{{ x is defined }}{{ x is not defined }}{{ messages is string }}{{ 'a' is string }}{{ 3 is odd }}", "FalseTrueFalseTrueTrue"},
      {"{{ true and 'y' }}{{ 0 or 'z' }}{{ 'A' if messages else 'B' }}{{ 'C' if false }}", "yzA"},
      {"{{ ' a ' | trim }}|{{ 'Ab' | upper }}{{ 'Ab' | lower }}|{{ [1, 'a'] | join('-') }}|{{ x | default('d') }}",
       "a|ABab|1-a|d"},
      {"{{ [3, 4] | first }}{{ [3, 4] | last }}{{ 'abc' | length }}{{ 'é😀' | length }}{{ 'abc'[::-1] }}{{ 'abcd'[1:3] }}",
       "3432cbabc"},
      // transformers' tojson (it replaces Jinja's): keys in order, nothing escaped for HTML,
      // non-ASCII as it is, unless asked.
      {"{{ {'b': [1, 2.5, none, true], 'a': '<é>\"'} | tojson }}", "{\"b\": [1, 2.5, null, true], \"a\": \"<é>\\\"\"}"},
      {"{{ {'b': 1, 'a': 'é😀\\x7f'} | tojson(ensure_ascii=true, sort_keys=true) }}",
       "{\"a\": \"\\u00e9\\ud83d\\ude00\\u007f\", \"b\": 1}"},
      {"{{ {'b': 1, 'a': {'y': [1]}} | tojson(indent=2) }}{{ {'b': 1, 'a': [1, 2]} | tojson(separators=[',', ':']) }}",
       "{\n  \"b\": 1,\n  \"a\": {\n    \"y\": [\n      1\n    ]\n  }\n}{\"b\":1,\"a\":[1,2]}"},
      {"{{ [1, 'a', none, {'k': \"it's\"}] }}", "[1, 'a', None, {'k': \"it's\"}]"},
      {"{{ ' x '.strip() }}{{ 'hello'.startswith('he') }}{{ 'a,b'.split(',') }}{{ {'a': 1}.get('b', 2) }}{{ 'ab cd'.title() }}",
       "xTrue['a', 'b']2Ab Cd"},
      {"{{ {'a': 1}.items() | list }}{{ (1,) }}{{ (1, 'x') == [1, 'x'] }}{{ (1, 'x') == (1, 'x') }}",
       "[('a', 1)](1,)FalseTrue"},
      {"{{ 'tab\\there\\n' }}{{ \"q\\\"\" }}{{ '\\u00e9' }}", "tab\there\nq\"é"},
      {"{# a comment #}{{ 1 }}{# another\nline #}", "1"},
      {"{{ messages | selectattr('role', 'equalto', 'user') | list | length }}{{ messages | map(attribute='role') | join(',') }}"
       "{{ [1, 0, 2] | select | list }}{{ [1, 2, 3] | reject('odd') | list }}{{ ['a'] | map('upper') | first }}",
       "2system,user,assistant,user[1, 2][2]A"},
      {"{{ {'a': {'b': 1}}['a'].b }}{{ '  a b  c '.split(none, 1) }}", "1['a', 'b  c ']"},
      {"{{ messages | join(', ', attribute='role') }}", "system, user, assistant, user"},
      {"{{ [{'a': {'b': 1}}, {'a': {'b': 2}}] | map(attribute='a.b') | list }}{{ [[1, 2], [3, 4]] | map(attribute='0') | list }}",
       "[1, 2][1, 3]"},
      {"{{ strftime_now is defined }}{{ range is defined }}{{ nope is defined }}", "TrueTrueFalse"},
  };
  for (const Case& c : cases) EXPECT_EQ(rendered_or_error(c.source), c.expected) << c.source;
}

// Macros (Hermes' and MiniCPM3's tool templates walk a JSON schema with a recursive one), set
// blocks, and the rest of jinja2's filters and tests that templates use; each expected text is
// jinja2's (3.1, as transformers renders).
TEST(ChatTemplate, MacrosSetBlocksAndTheOtherFiltersRenderAsJinja2Does) {
  const Case cases[] = {
      {"{% macro m(a, b='x') %}[{{ a }}-{{ b }}]{% endmacro %}{{ m(1) }}{{ m(2, 3) }}{{ m(b=4, a=5) }}{{ m is defined }}",
       "[1-x][2-3][5-4]True"},
      {"{%- macro rec(n) -%}{% if n > 0 %}{{ n }},{{ rec(n - 1) }}{% endif %}{%- endmacro -%}{{ rec(3) }}", "3,2,1,"},
      // A parameter not given is undefined, not the top-level variable of its name; what a macro
      // sets stays inside it; a namespace carries values out.
      {"{% macro m(messages) %}{{ messages is defined }}{% endmacro %}{{ m() }}{{ messages | length }}", "False4"},
      {"{% macro m(a) %}{% set a = a ~ '!' %}{{ a }}{{ bos_token }}{% endmacro %}{% set a = 'top' %}{{ m('in') }}{{ a }}",
       "in!<s>top"},
      {"{% set ns = namespace(n=0) %}{% macro count(m) %}{% set ns.n = ns.n + 1 %}{% endmacro %}"
       "{% for m in messages %}{{ count(m) }}{% endfor %}{{ ns.n }}",
       "4"},
      {"{% set x %}{% for m in messages %}{{ m.role[0] }}{% endfor %}{% endset %}{{ x }}/{{ x | length }}", "suau/4"},
      {"{{ messages | map(attribute='role') | sort | join(',') }}|{{ ['b', 'A', 'a', 'B'] | sort(reverse=true) | join }}|"
       "{{ ['b', 'A', 'a', 'B'] | sort(case_sensitive=true) | join }}",
       "assistant,system,user,user|bBAa|ABab"},
      {"{{ messages | sort(attribute='role,content') | map(attribute='content') | join('|') }}", "Hello!|Be brief.| Hi |é 😀"},
      {"{{ {'b': 1, 'a': 2, 'C': 0} | dictsort }}{{ {'b': 1, 'a': 2, 'C': 0} | dictsort(by='value', reverse=true) }}",
       "[('a', 2), ('b', 1), ('C', 0)][('a', 2), ('b', 1), ('C', 0)]"},
      {"{{ ['b', 'A', 'a', 'B'] | unique | list }}{{ [3, 1, 2] | min }}{{ [3, 1, 2] | max }}{{ ['b', 'A', 'c'] | max }}{{ [] | max }}",
       "['b', 'A']13c"},
      {"{{ [1, 2, 3.5] | sum }} {{ [[1], [2]] | sum(start=[]) }} {{ messages | map(attribute='content') | map('length') | sum }}",
       "6.5 [1, 2] 22"},
      {"{{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 7 | round }} {{ 1.23 | round(1, 'ceil') }} "
       "{{ 1.27 | round(1, 'floor') }} {{ 1234.5 | round(-2) }}",
       "2.0 4.0 2.67 7 1.3 1.2 1200.0"},
      {"{{ '3.25' | float }} {{ 'x' | float }} {{ 'x' | float(1.5) }} {{ 4 | float }} {{ ' 1e3 ' | float }} {{ '0x10' | float }}",
       "3.25 0.0 1.5 4.0 1000.0 0.0"},
      {"{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb\\n\\nc\\n' | indent(2, true) }}|{{ 'a\\nb\\n\\nc' | indent('--', blank=true) }}",
       "a\n    b\n\n    c|  a\n  b\n\n  c\n|a\n--b\n--\n--c"},
      {"{{ 1 | safe }}{{ '<b a=\"1\">&\\'' | e }}", "1&lt;b a=&#34;1&#34;&gt;&amp;&#39;"},
      {"{{ 2 is in [1, 2] }}{{ 3 is gt 2 }}{{ 3 is lt 2 }}{{ 3 is ge 3 }}{{ 3 is le 2 }}{{ 'abc' is lower }}{{ 'ABC' is upper }}"
       "{{ 'aBc' is lower }}{{ '12' is lower }}",
       "TrueTrueFalseTrueFalseTrueTrueFalseFalse"},
      {"{% for m in messages %}{{ loop.cycle('odd', 'even') }}{% endfor %}", "oddevenoddeven"},
      // transformers' loopcontrols extension, and its {% generation %} marker.
      {"{% for m in messages %}{% if loop.index > 2 %}{% break %}{% endif %}{{ m.role }};{% endfor %}", "system;user;"},
      {"{% for m in messages %}{% if m.role == 'user' %}{% continue %}{% endif %}{{ m.role }};{% endfor %}",
       "system;assistant;"},
      {"{% generation %}{{ messages[0].role }}{% endgeneration %}!", "system!"},
      // An unknown filter or test inside an if block (or a conditional expression) fails only if
      // it runs: DeepSeek-V3.2's template has a from_json branch that chat never takes.
      {"{% if false %}{{ x | from_json }}{% if x is nosuch %}{% endif %}{% endif %}{{ (x | nosuch) if false else 'ok' }}", "ok"},
      {"{{ messages.0.role }}{{ messages.1.content.1 }}", "systemH"},
      {"{{ none | selectattr('a') | list }}{{ '' | map('upper') | list }}", "[][]"},
      {"{{ '%s and %d' | format('a', 3) }}|{{ 'x=%05.1f|%-6s|%+d|%x|%#x|%#o|%e|%g|%%|%r' | format(3.14159, 'ab', 5, 255, 255, 8, "
       "12345.678, 0.0001, 'q') }}",
       "a and 3|x=003.1|ab    |+5|ff|0xff|0o10|1.234568e+04|0.0001|%|'q'"},
      {"{{ '%(name)s is %(age)d' | format(name='Bo', age=3) }}{{ ' %s-%s' % (1, 2) }}{{ ' %s' % [1, 2] }}{{ ' %.2s|%5s|' % ('abc', 'é') }}",
       "Bo is 3 1-2 [1, 2] ab|    é|"},
      {"{% raw %}{{ not a tag }} {% if %}{% endraw %}!", "{{ not a tag }} {% if %}!"},
      {"a\n  {% raw %}\n  {{ x }}\n  {% endraw %}\nb", "a\n\n  {{ x }}\nb"},
  };
  for (const Case& c : cases) EXPECT_EQ(rendered_or_error(c.source), c.expected) << c.source;
}

// transformers' global (4.43 on), which Llama 3.2's template calls for "Today Date: ...".
TEST(ChatTemplate, StrftimeNowWritesTheLocalTime) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char year[8];
  std::strftime(year, sizeof year, "%Y", &local);
  EXPECT_EQ(render("{% if strftime_now is defined %}{{ strftime_now('%Y') }}{% else %}none{% endif %}"), year);
  EXPECT_EQ(error_of("{{ strftime_now(1) }}"), "chat template line 1: strftime_now(): takes one format string");
}

// As transformers passes the message dicts whole: a tool call's history reaches the template.
TEST(ChatTemplate, AMessagesOtherFieldsReachTheTemplate) {
  const std::vector<ChatMessage> chat = {
      {"assistant", "", R"({"tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}], "n": 2.5, "none": null})"},
      {"tool", "42", R"({"tool_call_id": "c1", "role": "ignored"})"}};
  EXPECT_EQ(render("{% for m in messages %}{{ m.role }}:{{ m.content }}{% if m.tool_calls is defined %}"
                   "{{ m.tool_calls[0].function.name }}{{ m.tool_calls[0].function.arguments | tojson }}{{ m.n }}"
                   "{{ m.none is none }}{% endif %}{{ m.tool_call_id }};{% endfor %}",
                   chat),
            "assistant:f{\"x\": 1}2.5True;tool:42c1;");
}

TEST(ChatTemplate, WhitespaceFollowsTransformersSettings) {
  // trim_blocks drops the newline after a block tag; lstrip_blocks the indent before one.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc\n"), "a\n  b\nc");
  // "-" strips all whitespace on its side; "+" keeps it; {{ }} keeps the newline after it.
  EXPECT_EQ(render("a  \n {%- if true -%}  \n b {{- ' c ' -}} \n d{% endif %}"), "ab c d");
  EXPECT_EQ(render("{%+ if true %}x{% endif +%}\n  {%+ if 1 %}y{% endif %}"), "x\n  y");
  EXPECT_EQ(render("{{ 1 }}\n{{ 2 }}\n"), "1\n2");  // one trailing newline is dropped
  EXPECT_EQ(render("a\r\nb\rc"), "a\nb\nc");
  EXPECT_EQ(render("{{ '%}' }}{{ \"}}\" }}"), "%}}}");  // tag ends inside strings do not close tags
}

TEST(ChatTemplate, GenerationPromptAndMessagesReachTheTemplate) {
  const std::string chatml =
      "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}{% endfor %}"
      "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
  std::vector<ChatMessage> one = {{"user", "Hi", ""}};
  EXPECT_EQ(render(chatml, one, false), "<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ(render(chatml, one, true), "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_EQ(render(chatml, {}, true), "<|im_start|>assistant\n");
}

TEST(ChatTemplate, ErrorsNameTheLine) {
  const Case cases[] = {
      {"line one\n{{ x | foo }}", "chat template line 2: unknown filter 'foo'"},
      {"\n\n{% if x %}", "chat template line 3: missing '{% endif %}'"},
      {"{{ 'a' +\n }}", "chat template line 2: unexpected end of tag"},
      {"{% call m() %}{% endcall %}", "chat template line 1: unknown tag 'call'"},
      {"{{ x is foo }}", "chat template line 1: unknown test 'foo'"},
      {"{{ foo() }}", "chat template line 1: 'foo' is undefined"},  // as jinja2: when it runs
      {"{% for m in messages %}{{ m | foo }}{% endfor %}", "chat template line 1: unknown filter 'foo'"},
      {"{% if true %}\n{{ 1 | foo }}{% endif %}", "chat template line 2: unknown filter 'foo'"},  // soft, but it ran
      {"{% break %}", "chat template line 1: 'break' outside a for loop"},
      {"{% for m in messages %}{% macro m() %}{% continue %}{% endmacro %}{% endfor %}",
       "chat template line 1: 'continue' outside a for loop"},
      {"{% raw %}x", "chat template line 1: missing '{% endraw %}'"},
      {"{{ '%s %s' % (1,) }}", "chat template line 1: not enough arguments for format string"},
      {"{{ '%d' | format('x') }}", "chat template line 1: %d format: a real number is required, not str"},
      {"{% endfor %}", "chat template line 1: unexpected 'endfor'"},
      {"{{ 'abc }}", "chat template line 1: unclosed '{{'"},
      {"{% set x %}y", "chat template line 1: missing '{% endset %}'"},
      {"{% macro m(a) %}{{ a }}{% endmacro %}\n{{ m(1, 2) }}", "chat template line 2: macro 'm' takes not more than 1 argument(s)"},
      {"{% macro m(a) %}{% endmacro %}{{ m(b=1) }}", "chat template line 1: macro 'm' takes no keyword argument 'b'"},
      {"{{ later(1) }}{% macro later(x) %}{% endmacro %}", "chat template line 1: 'later' is undefined"},
      {"{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}", "chat template line 1: macro calls nested too deeply"},
      {"a\n{{ messages[0].content + 1 }}", "chat template line 2: unsupported operand types for +: 'str' and 'int'"},
      {"{{ 1 // 0 }}", "chat template line 1: division by zero"},
      {"\n{{ x.y.z }}", "chat template line 2: cannot read attribute 'y' of an undefined value"},
      {"{{ 'x'.nope() }}", "chat template line 1: a str has no method 'nope'"},
      {"{{ 9223372036854775807 + 1 }}", "chat template line 1: integer overflow"},
      {"{{ 'x' * 100000000 }}", "chat template line 1: repetition too large"},
      {"{% for i in range(2000) %}{% for j in range(2000) %}{% endfor %}{% endfor %}",
       "chat template line 1: too many loop iterations"},
      {"{% for i in range(1000) %}{% set y = 'x' * 60000000 %}{% endfor %}",
       "chat template line 1: the template builds too much text"},
  };
  for (const Case& c : cases) EXPECT_EQ(error_of(c.source), c.expected) << c.source;
  EXPECT_EQ(error_of("{{ " + std::string(100, '(') + "1" + std::string(100, ')') + " }}"),
            "chat template line 1: expression nested too deeply");
  // What a hostile tokenizer_config.json killed the server with (each a stack overflow or
  // gigabytes): long chains, values nested at run time, a namespace holding itself, and a
  // string copied into list after list.
  std::string chain = "{{ 1";
  for (int i = 0; i < 200000; ++i) chain += "+1";
  EXPECT_EQ(error_of(chain + " }}"), "chat template line 1: expression too long (over 4096 tokens)");
  std::string filters = "{{ 'a'";
  for (int i = 0; i < 200000; ++i) filters += "|upper";
  EXPECT_EQ(error_of(filters + " }}"), "chat template line 1: expression too long (over 4096 tokens)");
  EXPECT_EQ(error_of("{% set ns = namespace(x=[]) %}{% for i in range(200000) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}"),
            "chat template line 1: a list or dict nested too deeply");
  EXPECT_EQ(error_of("{% set ns = namespace(a=1) %}{% set ns.me = ns %}{{ ns }}"),
            "chat template line 1: a namespace() cannot hold a namespace() ('me')");
  EXPECT_EQ(error_of("{% set ns = namespace(a=1) %}{% set ns.me = [ns] %}"),
            "chat template line 1: a namespace() cannot hold a namespace() ('me')");
  EXPECT_EQ(error_of("{% set s = 'x' * 60000000 %}{% set ns = namespace(l=[]) %}{% for i in range(100) %}{% set ns.l = ns.l + [s] %}{% endfor %}"),
            "chat template line 1: the template builds too much text");
}

TEST(ChatTemplate, RaiseExceptionIsTheCallersErrorWithItsMessage) {
  const std::string alternate =
      "{% for m in messages %}{% if (m['role'] == 'user') != (loop.index0 % 2 == 0) %}"
      "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
      "{{ m.content }}{% endfor %}";
  EXPECT_EQ(render(alternate, {{"user", "a", ""}, {"assistant", "b", ""}}), "ab");
  try {
    render(alternate, {{"user", "a", ""}, {"user", "b", ""}});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
    EXPECT_STREQ(e.what(), "Conversation roles must alternate user/assistant/user/assistant/...");
  }
}

TEST(ChatTemplate, PlainTemplateIsDocumented) {
  ChatTemplate plain = ChatTemplate::plain();
  EXPECT_TRUE(plain.is_plain());
  EXPECT_FALSE(ChatTemplate::parse("x").is_plain());
  std::vector<ChatMessage> chat = {{"system", "S", ""}, {"user", "Hi", ""}};
  EXPECT_EQ(plain.apply(chat, false), "system: S\nuser: Hi\n");
  EXPECT_EQ(plain.apply(chat, true), "system: S\nuser: Hi\nassistant:");
}

class ChatTemplateForModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("fusor_chat_template_test_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  std::filesystem::path dir_;
};

TEST_F(ChatTemplateForModel, ReadsTheTemplateAndItsSpecialTokens) {
  write("tokenizer_config.json",
        R"({"chat_template": "{{ bos_token }}{% for m in messages %}{{ m.content }}{{ eos_token }}{% endfor %}",
            "bos_token": {"content": "<s>", "lstrip": false}, "eos_token": null})");
  write("special_tokens_map.json", R"({"eos_token": "</s>"})");
  write("model.onnx", "");
  std::vector<ChatMessage> chat = {{"user", "a", ""}, {"assistant", "b", ""}};
  for (const std::filesystem::path& p : {dir_, dir_ / "model.onnx"}) {
    ChatTemplate t = ChatTemplate::for_model(p.string());
    EXPECT_FALSE(t.is_plain());
    EXPECT_EQ(t.apply(chat, false), "<s>a</s>b</s>");
  }
}

TEST_F(ChatTemplateForModel, NamedTemplatesTakeTheDefault) {
  write("tokenizer_config.json",
        R"({"chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}]})");
  EXPECT_EQ(ChatTemplate::for_model(dir_.string()).apply({}, false), "D");
}

TEST_F(ChatTemplateForModel, WithoutATemplateThePlainOneServes) {
  EXPECT_TRUE(ChatTemplate::for_model(dir_.string()).is_plain());  // no tokenizer_config.json
  write("tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_TRUE(ChatTemplate::for_model(dir_.string()).is_plain());
}

TEST_F(ChatTemplateForModel, BrokenFilesAreOneLineErrors) {
  auto error_for = [&](const std::string& config) {
    write("tokenizer_config.json", config);
    try {
      ChatTemplate::for_model(dir_.string());
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      return what;
    }
    return std::string("(no error)");
  };
  EXPECT_NE(error_for("{\"chat_template\": ").find("malformed JSON"), std::string::npos);
  EXPECT_NE(error_for(R"({"chat_template": 3})").find("neither a string nor a list"), std::string::npos);
  EXPECT_NE(error_for(R"({"chat_template": [{"name": "x", "template": "y"}]})").find("no template named \"default\""),
            std::string::npos);
  EXPECT_NE(error_for(R"({"chat_template": "{% if %}"})").find("tokenizer_config.json: chat template line 1:"),
            std::string::npos);
  EXPECT_NE(error_for(R"({"chat_template": "x", "bos_token": 5})").find("\"bos_token\""), std::string::npos);
}

TEST(ChatTemplate, CopiesRenderOnManyThreads) {
  ChatTemplate t = ChatTemplate::parse("{% for m in messages %}{{ loop.index }}:{{ m.content | upper }} {% endfor %}");
  std::vector<std::thread> threads;
  std::vector<std::string> out(8);
  for (size_t i = 0; i < out.size(); ++i)
    threads.emplace_back([&, i, copy = t] {
      for (int k = 0; k < 200; ++k) out[i] = copy.apply(kChat, false);
    });
  for (auto& th : threads) th.join();
  for (const std::string& s : out) EXPECT_EQ(s, "1:BE BRIEF. 2: HI  3:HELLO! 4:é 😀 ");
}

}  // namespace
}  // namespace fusor
