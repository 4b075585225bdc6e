// Tokenizer on testdata/tiny_tokenizer.json: 256 byte tokens (id = byte value), 17 merges
// (h e, l l, he ll, hell o, Ġ w, o r, Ġw or, Ġwor ld, l d, b c, a b, a a, Ġ Ġ, ĠĠ ĠĠ, Ċ Ċ,
// ' s, Ã ©) and three added tokens: <|im_end|> and <|im (special), <think> (not special).
#include "model/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <fstream>
#include <sstream>
#include <thread>

namespace dice::tokenizer {
namespace {

const std::string kFixture = std::string(DICE_TOKENIZER_TESTDATA) + "/tiny_tokenizer.json";

std::string read_fixture() {
  std::ifstream in(kFixture, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

Tokenizer load_fixture() {
  Result<Tokenizer> tok = Tokenizer::load(kFixture);
  EXPECT_TRUE(tok.ok()) << tok.status().to_string();
  return std::move(tok).value();
}

// The ids of tokens given by their bytes.
std::vector<std::int32_t> ids(const Tokenizer& tok, std::initializer_list<std::string> tokens) {
  std::vector<std::int32_t> out;
  for (const std::string& t : tokens) {
    std::optional<std::int32_t> id = tok.token_id(t);
    EXPECT_TRUE(id.has_value()) << "no token \"" << t << "\"";
    out.push_back(id.value_or(-1));
  }
  return out;
}

// The fixture with an edit applied to its JSON, loaded from text.
template <typename Edit>
Result<Tokenizer> load_edited(Edit edit) {
  boost::json::value doc = boost::json::parse(read_fixture());
  edit(doc.as_object());
  return Tokenizer::from_json(boost::json::serialize(doc), "edited.json");
}

TEST(TokenizerTest, LoadsFixture) {
  Tokenizer tok = load_fixture();
  EXPECT_EQ(tok.merge_count(), 17u);
  EXPECT_EQ(tok.added_tokens().size(), 3u);
  EXPECT_EQ(tok.vocab_size(), 276);
  EXPECT_EQ(tok.token_bytes('A'), std::optional<std::string_view>("A"));
  EXPECT_EQ(tok.token_bytes(32), std::optional<std::string_view>(" "));  // "Ġ" is a space
  EXPECT_FALSE(tok.token_bytes(9999).has_value());
}

TEST(TokenizerTest, MergesApplyByRank) {
  Tokenizer tok = load_fixture();
  EXPECT_EQ(tok.encode("hello"), ids(tok, {"hello"}));
  // " world": "l d" (rank 8) must happen before "Ġwor ld" (rank 7) can.
  EXPECT_EQ(tok.encode("hello world"), ids(tok, {"hello", " world"}));
  EXPECT_EQ(tok.encode("abc"), ids(tok, {"a", "bc"}));  // "b c" outranks "a b"
  EXPECT_EQ(tok.encode("aaa"), ids(tok, {"aa", "a"}));  // equal ranks: leftmost first
  EXPECT_EQ(tok.encode("it's"), ids(tok, {"i", "t", "'s"}));
  EXPECT_EQ(tok.encode("x\n\n"), ids(tok, {"x", "\n\n"}));
  EXPECT_EQ(tok.encode(std::string(9, ' ')), ids(tok, {"    ", "    ", " "}));
}

TEST(TokenizerTest, StringAndPairMergeFormatsAgree) {
  Tokenizer pairs = load_fixture();
  Result<Tokenizer> strings = load_edited([](boost::json::object& doc) {
    boost::json::array& merges = doc["model"].as_object()["merges"].as_array();
    for (boost::json::value& m : merges) {
      boost::json::array pair = m.as_array();
      m = boost::json::string(std::string(pair[0].as_string()) + " " +
                              std::string(pair[1].as_string()));
    }
  });
  ASSERT_TRUE(strings.ok()) << strings.status().to_string();
  for (const char* text : {"hello world", "abc aaa", "it's   x\n\n\n", "caf\xC3\xA9"}) {
    EXPECT_EQ(strings->encode(text), pairs.encode(text)) << text;
  }
}

TEST(TokenizerTest, AddedTokensMatchFirstLongestLeftmost) {
  Tokenizer tok = load_fixture();
  const std::int32_t im_end = tok.token_id("<|im_end|>").value();
  const std::int32_t im = tok.token_id("<|im").value();
  const std::int32_t think = tok.token_id("<think>").value();
  EXPECT_EQ(tok.encode("<|im_end|>"), std::vector<std::int32_t>{im_end});
  EXPECT_EQ(tok.encode("<|im_en"), (std::vector<std::int32_t>{im, '_', 'e', 'n'}));
  std::vector<std::int32_t> mixed = tok.encode("hello<|im_end|><think>hello");
  EXPECT_EQ(mixed, (std::vector<std::int32_t>{tok.token_id("hello").value(), im_end, think,
                                              tok.token_id("hello").value()}));
  EXPECT_TRUE(tok.is_special(im_end));
  EXPECT_FALSE(tok.is_special(think));

  EncodeOptions plain;
  plain.match_added_tokens = false;
  EXPECT_EQ(tok.encode("<|im_end|>", plain),
            ids(tok, {"<", "|", "i", "m", "_", "e", "n", "d", "|", ">"}));
}

TEST(TokenizerTest, UnknownCharactersFallBackToBytes) {
  Tokenizer tok = load_fixture();
  // No merges cover these: one token per UTF-8 byte (ids equal byte values in the fixture).
  EXPECT_EQ(tok.encode("\xE2\x82\xAC"), (std::vector<std::int32_t>{0xE2, 0x82, 0xAC}));
  EXPECT_EQ(tok.encode("\xF0\x9F\x98\x80"), (std::vector<std::int32_t>{0xF0, 0x9F, 0x98, 0x80}));
  // Ill-formed input becomes U+FFFD (EF BF BD) first, as the oracle sees it.
  EXPECT_EQ(tok.encode("\xFF"), (std::vector<std::int32_t>{0xEF, 0xBF, 0xBD}));
}

TEST(TokenizerTest, NormalizesToNfc) {
  Tokenizer tok = load_fixture();
  // e + combining acute composes to é (C3 A9), which the "Ã ©" merge joins.
  EXPECT_EQ(tok.encode("e\xCC\x81"), ids(tok, {"\xC3\xA9"}));
  EXPECT_EQ(tok.encode("e\xCC\x81"), tok.encode("\xC3\xA9"));
}

TEST(TokenizerTest, DecodeRoundTripsBytes) {
  Tokenizer tok = load_fixture();
  for (const char* text :
       {"hello world", "", "  x\r\n\ty  ", "<|im_end|>a<think>", "\xE4\xBD\xA0\xE5\xA5\xBD",
        "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9", "1234567890", "don't 'LL"}) {
    EXPECT_EQ(tok.decode(tok.encode(text)), text);
  }
  // A character cut between tokens: raw bytes by default, U+FFFD on request.
  std::vector<std::int32_t> cut = {'a', 0xE2, 0x82};
  EXPECT_EQ(tok.decode(cut), "a\xE2\x82");
  DecodeOptions replace;
  replace.replace_invalid_utf8 = true;
  EXPECT_EQ(tok.decode(cut, replace), "a\xEF\xBF\xBD");
}

TEST(TokenizerTest, DecodeSkipsSpecialAndUnknownIds) {
  Tokenizer tok = load_fixture();
  std::vector<std::int32_t> seq = tok.encode("hi<|im_end|><think>");
  seq.push_back(100000);  // no such token
  seq.push_back(-5);
  EXPECT_EQ(tok.decode(seq), "hi<|im_end|><think>");
  DecodeOptions skip;
  skip.skip_special_tokens = true;
  EXPECT_EQ(tok.decode(seq, skip), "hi<think>");  // <think> is added but not special
}

TEST(TokenizerTest, AddSpecialTokenLikeSdarMask) {
  Tokenizer tok = load_fixture();
  EXPECT_EQ(tok.encode("a<|MASK|>").size(), 1u + 8u);  // not a token yet: plain text
  ASSERT_TRUE(tok.add_special_token(kMaskToken, 400).ok());
  EXPECT_EQ(tok.encode("a<|MASK|>"), (std::vector<std::int32_t>{'a', 400}));
  EXPECT_TRUE(tok.is_special(400));
  EXPECT_EQ(tok.vocab_size(), 401);
  EXPECT_EQ(tok.decode({400}), kMaskToken);
  EXPECT_TRUE(tok.add_special_token(kMaskToken, 400).ok());  // again: no-op
  Status other_id = tok.add_special_token(kMaskToken, 401);
  EXPECT_EQ(other_id.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other_id.message().find("already has id 400"), std::string::npos);
  Status taken = tok.add_special_token("<|other|>", 'a');
  EXPECT_EQ(taken.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(taken.message().find("already taken"), std::string::npos);
  EXPECT_FALSE(tok.add_special_token("", 500).ok());
  EXPECT_FALSE(tok.add_special_token("<|huge|>", kMaxTokenId + 1).ok());
}

// encode is const and shared across threads; a tiny cache makes the threads clear and refill
// it under each other.
TEST(TokenizerTest, ConcurrentEncodesAgree) {
  TokenizerOptions options;
  options.cache_capacity = 4;
  Result<Tokenizer> tok = Tokenizer::load(kFixture, options);
  ASSERT_TRUE(tok.ok()) << tok.status().to_string();
  std::vector<std::string> texts;
  for (int i = 0; i < 50; ++i) {
    texts.push_back("hello world " + std::to_string(i) + " abc" + std::string(i % 7, 'a') +
                    "<|im_end|>it's");
  }
  std::vector<std::vector<std::int32_t>> want;
  for (const std::string& t : texts) want.push_back(tok->encode(t));
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 100; ++round) {
        std::size_t i = (round * 7 + t * 13) % texts.size();
        if (tok->encode(texts[i]) != want[i]) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
}

// --- Bad files: each error names the file and what is wrong.

void expect_error(const Result<Tokenizer>& r, StatusCode code, const std::string& fragment) {
  ASSERT_FALSE(r.ok()) << "expected an error containing: " << fragment;
  EXPECT_EQ(r.status().code(), code) << r.status().to_string();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().to_string();
}

TEST(TokenizerBadFileTest, MissingFile) {
  expect_error(Tokenizer::load("/nonexistent/tokenizer.json"), StatusCode::kNotFound,
               "/nonexistent/tokenizer.json: no such file");
}

TEST(TokenizerBadFileTest, InvalidJsonReportsLineAndColumn) {
  expect_error(Tokenizer::from_json("{\n  \"model\": {,\n}", "bad.json"), StatusCode::kCorruption,
               "bad.json:2:13: invalid JSON");
  expect_error(Tokenizer::from_json("", "empty.json"), StatusCode::kCorruption,
               "empty.json:1:1: invalid JSON");
  expect_error(Tokenizer::from_json("{} x", "trailing.json"), StatusCode::kCorruption,
               "trailing.json:1:4: invalid JSON");
  expect_error(Tokenizer::from_json("[1]", "array.json"), StatusCode::kCorruption,
               "array.json: (top level): expected an object, found an array");
}

TEST(TokenizerBadFileTest, MissingOrMistypedFields) {
  expect_error(load_edited([](auto& d) { d.erase("model"); }), StatusCode::kCorruption,
               "edited.json: model: missing");
  expect_error(load_edited([](auto& d) { d["model"].as_object().erase("vocab"); }),
               StatusCode::kCorruption, "edited.json: model.vocab: missing");
  expect_error(load_edited([](auto& d) { d["model"].as_object()["merges"] = 3; }),
               StatusCode::kCorruption, "model.merges: expected an array, found an integer");
  expect_error(
      load_edited([](auto& d) { d["model"].as_object()["vocab"].as_object()["he"] = "x"; }),
      StatusCode::kCorruption, "model.vocab[\"he\"]: expected a token id");
  expect_error(
      load_edited([](auto& d) { d["model"].as_object()["vocab"].as_object()["he"] = 1 << 30; }),
      StatusCode::kCorruption, "model.vocab[\"he\"]: token id out of range");
  expect_error(load_edited([](auto& d) { d["model"].as_object()["vocab"].as_object()["he"] = 5; }),
               StatusCode::kCorruption, "id 5 is also used by another token");
  expect_error(
      load_edited([](auto& d) { d["model"].as_object()["merges"].as_array()[3] = "hell"; }),
      StatusCode::kCorruption, "model.merges[3]: expected \"left right\"");
  expect_error(load_edited([](auto& d) {
                 d["model"].as_object()["merges"].as_array()[0] = boost::json::array{"h", "zz"};
               }),
               StatusCode::kCorruption, "model.merges[0]: \"zz\" not in vocab");
  expect_error(load_edited([](auto& d) { d["model"].as_object()["vocab"].as_object().erase("Ġ"); }),
               StatusCode::kCorruption, "model.vocab: no token for byte 0x20");
  expect_error(
      load_edited([](auto& d) { d["added_tokens"].as_array()[0].as_object().erase("id"); }),
      StatusCode::kCorruption, "added_tokens[0].id: missing");
}

TEST(TokenizerBadFileTest, UnsupportedFeaturesAreNamed) {
  expect_error(load_edited([](auto& d) {
                 d["normalizer"] = {{"type", "NFKC"}};
               }),
               StatusCode::kInvalidArgument, "normalizer.type: unsupported: NFKC");
  expect_error(load_edited([](auto& d) {
                 d["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
               }),
               StatusCode::kInvalidArgument, "pre_tokenizer: unsupported");
  expect_error(
      load_edited([](auto& d) {
        d["pre_tokenizer"].as_object()["pretokenizers"].as_array()[0].as_object()["pattern"] = {
            {"Regex", "\\s+"}};
      }),
      StatusCode::kInvalidArgument, "only the Qwen2 split regex");
  expect_error(load_edited([](auto& d) { d["model"].as_object()["type"] = "WordPiece"; }),
               StatusCode::kInvalidArgument, "model.type: unsupported: only BPE");
  expect_error(load_edited([](auto& d) { d["model"].as_object()["ignore_merges"] = true; }),
               StatusCode::kInvalidArgument, "model.ignore_merges: unsupported");
}

}  // namespace
}  // namespace dice::tokenizer
