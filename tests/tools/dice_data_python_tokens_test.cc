// The Python tokens the infilling split reads (tools/dice-data/python_tokens.h): strings end where
// Python ends them, nothing inside a string or a comment is a token, brackets nest, statements
// start where Python starts them, and malformed text is an error naming the line.
#include "tools/dice-data/python_tokens.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dice::data {
namespace {

std::vector<PyToken> tokens_of(const std::string& source) {
  auto r = tokenize_python(source, "t.py");
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::vector<PyToken>{};
}

std::vector<std::string> texts(const std::vector<PyToken>& tokens) {
  std::vector<std::string> out;
  for (const auto& t : tokens) out.push_back(t.text);
  return out;
}

TEST(DiceDataPythonTokensTest, StringsEndWhereSourceEnds) {
  const std::string src =
      "a = 'x\\'y'\n"
      "b = r\"\\\"\"\n"
      "c = \"\"\"one \"\" two\n\\\"\"\" three\"\"\"\n"
      "d = f'{x}' + Rb'\\x00' + '''q'''\n";
  const auto t = tokens_of(src);
  EXPECT_EQ(texts(t),
            (std::vector<std::string>{"a", "=", "'x\\'y'", "b", "=", "r\"\\\"\"", "c", "=",
                                      "\"\"\"one \"\" two\n\\\"\"\" three\"\"\"", "d", "=",
                                      "f'{x}'", "+", "Rb'\\x00'", "+", "'''q'''"}));
  EXPECT_EQ(t[2].kind, PyTokenKind::kString);
  EXPECT_EQ(t[5].kind, PyTokenKind::kString);
  EXPECT_EQ(t[13].kind, PyTokenKind::kString);
  // Offsets cut the token out of the source; a string keeps the line it opens on.
  for (const auto& tok : t) EXPECT_EQ(src.substr(tok.begin, tok.end - tok.begin), tok.text);
  EXPECT_EQ(t[8].line, 3);
  EXPECT_EQ(t[9].line, 5);
}

TEST(DiceDataPythonTokensTest, EscapedLineBreaksContinueAStringAlsoWithCrLf) {
  const auto t = tokens_of("s = 'a\\\r\nb' + 'c\\\nd'\r\nx = 1\r\n");
  EXPECT_EQ(texts(t),
            (std::vector<std::string>{"s", "=", "'a\\\r\nb'", "+", "'c\\\nd'", "x", "=", "1"}));
  ASSERT_EQ(t.size(), 8u);
  EXPECT_TRUE(t[5].starts_statement && t[5].at_column_zero);
  EXPECT_EQ(t[5].line, 4);
}

TEST(DiceDataPythonTokensTest, NothingInCommentsOrStringsIsAToken) {
  const auto t = tokens_of(
      "# load_inline(\n"
      "x = \"load_inline(\"  # ) ]\n"
      "y = '''\nload_inline(\n'''\n");
  for (const auto& tok : t) EXPECT_NE(tok.text, "load_inline") << tok.line;
  EXPECT_EQ(texts(t).size(), 6u);
}

TEST(DiceDataPythonTokensTest, BracketsNestAndStatementsStartAtColumnZero) {
  const auto t = tokens_of(
      "ext = f(a,\n"
      "  b=[1, 2])\n"
      "if x:\n"
      "    y = 1; z = \\\n"
      "2\n");
  // "ext" "=" "f" "(" "a" "," "b" "=" "[" "1" "," "2" "]" ")" "if" "x" ":" "y" "=" "1" ";" "z"
  // "=" "2"
  ASSERT_EQ(t.size(), 24u);
  EXPECT_EQ(t[2].depth, 0);   // f
  EXPECT_EQ(t[3].depth, 0);   // (
  EXPECT_EQ(t[4].depth, 1);   // a
  EXPECT_EQ(t[9].depth, 2);   // 1
  EXPECT_EQ(t[12].depth, 1);  // ]
  EXPECT_EQ(t[13].depth, 0);  // )
  EXPECT_TRUE(t[0].starts_statement && t[0].at_column_zero);
  EXPECT_FALSE(t[6].starts_statement);  // b, inside the call's brackets on the next line
  EXPECT_TRUE(t[14].starts_statement && t[14].at_column_zero);   // if
  EXPECT_TRUE(t[17].starts_statement && !t[17].at_column_zero);  // y, indented
  EXPECT_TRUE(t[21].starts_statement && !t[21].at_column_zero);  // z, after ";"
  EXPECT_FALSE(t[23].starts_statement);  // 2, after a backslash continuation
  EXPECT_EQ(t[23].line, 5);
}

TEST(DiceDataPythonTokensTest, MalformedTextNamesTheLine) {
  const std::pair<std::string, std::string> cases[] = {
      {"a = 1\nb = \"\"\"never\nclosed\n", "t.py:2: unterminated string: the \"\"\" opened here"},
      {"a = 'open\nb = 2\n", "t.py:1: unterminated string: the ' opened here is not closed"},
      {"x = 1\nf(a, [b)\n", "t.py:2: ')' does not close the '[' of line 2"},
      {"x = 1\n)\n", "t.py:2: ')' closes nothing"},
      {"f(\n  a,\n", "t.py:1: '(' is never closed"},
      {"s = 'ends in a backslash\\", "t.py:1: unterminated string"},
  };
  for (const auto& [src, message] : cases) {
    auto r = tokenize_python(src, "t.py");
    ASSERT_FALSE(r.ok()) << src;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(message, 0), 0u) << r.status().message();
  }
}

}  // namespace
}  // namespace dice::data
