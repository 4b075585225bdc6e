// token_text_ends on testdata/tiny_tokenizer.json (byte tokens: id = byte value; <|im_end|> is
// special, id 273): offsets fit the decoded text, or there are none.
#include "model/tokenizer/token_ends.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dice::tokenizer {
namespace {

const std::string kFixture = std::string(DICE_TOKENIZER_TESTDATA) + "/tiny_tokenizer.json";

Tokenizer load_fixture() {
  Result<Tokenizer> tok = Tokenizer::load(kFixture);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

DecodeOptions as_rollout_decodes() {
  DecodeOptions options;
  options.skip_special_tokens = true;
  options.replace_invalid_utf8 = true;
  return options;
}

TEST(TokenEndsTest, EachTokenEndsWhereItsBytesEndInTheText) {
  const Tokenizer tok = load_fixture();
  const std::vector<std::int32_t> ids = tok.encode("hello world");
  const std::string text = tok.decode(ids, as_rollout_decodes());
  const std::vector<std::uint32_t> ends = token_text_ends(tok, ids, as_rollout_decodes(), text);
  ASSERT_EQ(ends.size(), ids.size());
  // "hello" and " world" are merged tokens of the fixture.
  EXPECT_EQ(ends, (std::vector<std::uint32_t>{5, 11}));
}

TEST(TokenEndsTest, ASkippedSpecialTokenEndsWhereTheTokenBeforeItDid) {
  const Tokenizer tok = load_fixture();
  const std::vector<std::int32_t> ids = {'a', 'b', 273};  // "ab" then <|im_end|>
  const std::string text = tok.decode(ids, as_rollout_decodes());
  ASSERT_EQ(text, "ab");
  EXPECT_EQ(token_text_ends(tok, ids, as_rollout_decodes(), text),
            (std::vector<std::uint32_t>{1, 2, 2}));
}

TEST(TokenEndsTest, ACharacterSplitAcrossTokensGivesAnOffsetInsideIt) {
  const Tokenizer tok = load_fixture();
  const std::vector<std::int32_t> ids = {'x', 0xC3, 0xA9};  // "x" then the two bytes of "é"
  const std::string text = tok.decode(ids, as_rollout_decodes());
  ASSERT_EQ(text, "x\xC3\xA9");
  EXPECT_EQ(token_text_ends(tok, ids, as_rollout_decodes(), text),
            (std::vector<std::uint32_t>{1, 2, 3}));
}

TEST(TokenEndsTest, TextWhoseBrokenUtf8WasReplacedGetsNoOffsets) {
  const Tokenizer tok = load_fixture();
  const std::vector<std::int32_t> ids = {'x', 0xC3};  // cut inside a character
  const std::string text = tok.decode(ids, as_rollout_decodes());
  ASSERT_EQ(text, "x\xEF\xBF\xBD");  // U+FFFD
  EXPECT_TRUE(token_text_ends(tok, ids, as_rollout_decodes(), text).empty());
  EXPECT_TRUE(token_text_ends(tok, ids, as_rollout_decodes(), "something else").empty());
}

}  // namespace
}  // namespace dice::tokenizer
