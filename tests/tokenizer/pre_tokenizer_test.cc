#include "model/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dice::tokenizer {
namespace {

std::vector<std::string> split(std::string_view text) {
  SplitScratch scratch;
  std::vector<Piece> pieces;
  split_qwen2(text, &scratch, &pieces);
  std::vector<std::string> out;
  for (const Piece& p : pieces) out.emplace_back(text.substr(p.begin, p.end - p.begin));
  return out;
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizerTest, WordsTakeOneLeadingNonLetter) {
  EXPECT_EQ(split("Hello, world!"), (Pieces{"Hello", ",", " world", "!"}));
  EXPECT_EQ(split("(foo)"), (Pieces{"(foo", ")"}));
  EXPECT_EQ(split("\tx"), (Pieces{"\tx"}));
  EXPECT_EQ(split("\nx"), (Pieces{"\n", "x"}));  // a newline never leads a word
}

TEST(PreTokenizerTest, ContractionsAreCaseInsensitiveAscii) {
  EXPECT_EQ(split("it's"), (Pieces{"it", "'s"}));
  EXPECT_EQ(split("I'LL"), (Pieces{"I", "'LL"}));
  EXPECT_EQ(split("we'Re"), (Pieces{"we", "'Re"}));
  EXPECT_EQ(split("'x"), (Pieces{"'x"}));  // not a contraction: apostrophe leads the word
}

TEST(PreTokenizerTest, NumbersSplitIntoSingleDigits) {
  EXPECT_EQ(split("x 123"), (Pieces{"x", " ", "1", "2", "3"}));
  EXPECT_EQ(split("\xD9\xA3\xD9\xA4"), (Pieces{"\xD9\xA3", "\xD9\xA4"}));  // Arabic-Indic digits
}

TEST(PreTokenizerTest, PunctuationRunsKeepTrailingNewlines) {
  EXPECT_EQ(split("x.\n\ny"), (Pieces{"x", ".\n\n", "y"}));
  EXPECT_EQ(split("a ==> b"), (Pieces{"a", " ==>", " b"}));
  EXPECT_EQ(split("\xF0\x9F\x98\x80!"), (Pieces{"\xF0\x9F\x98\x80!"}));  // emoji is a symbol
}

TEST(PreTokenizerTest, WhitespaceRules) {
  EXPECT_EQ(split("a  b"), (Pieces{"a", " ", " b"}));      // \s+(?!\S) leaves one space
  EXPECT_EQ(split("a   "), (Pieces{"a", "   "}));          // at the end: the whole run
  EXPECT_EQ(split("x\n\ny"), (Pieces{"x", "\n\n", "y"}));  // \s*[\r\n]+
  EXPECT_EQ(split("x  \n  y"), (Pieces{"x", "  \n", " ", " y"}));
  EXPECT_EQ(split("x\r\n\ty"), (Pieces{"x", "\r\n", "\ty"}));
  EXPECT_EQ(split("\t\tfoo"), (Pieces{"\t", "\tfoo"}));
}

TEST(PreTokenizerTest, PiecesTileTheText) {
  std::string text = "def f(x):\n    return x**2  # \xE4\xBD\xA0\xE5\xA5\xBD\r\n\r\n'LL 42";
  std::string joined;
  for (const std::string& p : split(text)) {
    EXPECT_FALSE(p.empty());
    joined += p;
  }
  EXPECT_EQ(joined, text);
}

}  // namespace
}  // namespace dice::tokenizer
