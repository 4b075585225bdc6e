#include "model/tokenizer/unicode.h"

#include <gtest/gtest.h>

#include <string>

namespace dice::tokenizer {
namespace {

std::string replaced(std::string_view s) {
  std::string out;
  replace_invalid_utf8(s, &out);
  return out;
}

std::string nfc(std::string_view s) {
  std::string out;
  return nfc_normalize(s, &out) ? out : std::string(s);
}

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8Test, DecodesWellFormedSequences) {
  std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80";  // a é € 😀
  std::size_t pos = 0;
  EXPECT_EQ(decode_utf8(s, &pos), U'a');
  EXPECT_EQ(decode_utf8(s, &pos), U'\u00E9');
  EXPECT_EQ(decode_utf8(s, &pos), U'\u20AC');
  EXPECT_EQ(decode_utf8(s, &pos), U'\U0001F600');
  EXPECT_EQ(pos, s.size());
  EXPECT_TRUE(is_valid_utf8(s));
  EXPECT_TRUE(is_valid_utf8(kFffd));  // U+FFFD itself is well-formed
}

// One U+FFFD per maximal ill-formed subpart (Unicode 3.9, Table 3-8; what WHATWG decoders do).
TEST(Utf8Test, ReplacesEachMaximalSubpart) {
  EXPECT_EQ(replaced("\xFF"), kFffd);
  EXPECT_EQ(replaced("\xC0\xAF"), kFffd + kFffd);                          // C0 never starts
  EXPECT_EQ(replaced("\xE2\x82"), kFffd);                                  // truncated: one
  EXPECT_EQ(replaced("\xE2\x82x"), kFffd + "x");                           // then the next char
  EXPECT_EQ(replaced("\xED\xA0\x80"), kFffd + kFffd + kFffd);              // surrogate
  EXPECT_EQ(replaced("\xF0\x80\x80"), kFffd + kFffd + kFffd);              // overlong
  EXPECT_EQ(replaced("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(replaced("\xF0\x9F\x98"), kFffd);                              // cut emoji: one
  EXPECT_EQ(replaced("a\x80"
                     "b"),
            "a" + kFffd + "b");
  EXPECT_FALSE(is_valid_utf8("\xC3"));
  EXPECT_FALSE(is_valid_utf8("ok\xED\xA0\x80"));
}

TEST(CharClassTest, FollowsJavaScriptClasses) {
  EXPECT_EQ(char_class(U'a'), kClassLetter);
  EXPECT_EQ(char_class(U'\u4F60'), kClassLetter);  // 你
  EXPECT_EQ(char_class(U'\u0628'), kClassLetter);  // Arabic beh
  EXPECT_EQ(char_class(U'7'), kClassNumber);
  EXPECT_EQ(char_class(U'\u0663'), kClassNumber);  // Arabic-Indic three
  EXPECT_EQ(char_class(U'\u2167'), kClassNumber);  // Roman numeral eight (Nl)
  EXPECT_EQ(char_class(U' '), kClassSpace);
  EXPECT_EQ(char_class(U'\n'), kClassSpace | kClassCrLf);
  EXPECT_EQ(char_class(U'\r'), kClassSpace | kClassCrLf);
  EXPECT_EQ(char_class(U'\u3000'), kClassSpace);
  EXPECT_EQ(char_class(U'\uFEFF'), kClassSpace);  // ECMAScript \s has the BOM
  EXPECT_EQ(char_class(U'\u0085'), 0);            // ... and not NEL (Rust's \s does)
  EXPECT_EQ(char_class(U'_'), 0);
  EXPECT_EQ(char_class(U'\u0301'), 0);  // combining mark: neither letter nor number
  EXPECT_EQ(char_class(U'\U0001F600'), 0);
  EXPECT_EQ(char_class(U'\U0001D400'), kClassLetter);  // mathematical bold A
}

TEST(NfcTest, ComposesAndReorders) {
  std::string out;
  EXPECT_FALSE(nfc_normalize("plain ascii and caf\xC3\xA9", &out));  // quick check: below U+0300
  EXPECT_EQ(nfc("e\xCC\x81"), "\xC3\xA9");                           // e + acute -> é
  EXPECT_EQ(nfc("\xE2\x84\xAB"), "\xC3\x85");                        // Angstrom sign -> Å
  EXPECT_EQ(nfc("\xE1\x84\x80\xE1\x85\xA1\xE1\x86\xA8"), "\xEA\xB0\x81");  // Hangul jamo -> 각
  // a + acute (230) + dot below (220): reorder, compose a+dot below, keep the acute.
  EXPECT_EQ(nfc("a\xCC\x81\xCC\xA3"), "\xE1\xBA\xA1\xCC\x81");
  // ḋ + dot below -> ḍ + dot above.
  EXPECT_EQ(nfc("\xE1\xB8\x8B\xCC\xA3"), "\xE1\xB8\x8D\xCC\x87");
  // A mark at the start has nothing to join.
  EXPECT_EQ(nfc("\xCC\x81"
                "a"),
            "\xCC\x81"
            "a");
  // Two marks of the same class: only the first joins the base.
  EXPECT_EQ(nfc("a\xCC\x81\xCC\x81"), "\xC3\xA1\xCC\x81");
  EXPECT_STREQ(unicode_version(), "17.0");
}

}  // namespace
}  // namespace dice::tokenizer
