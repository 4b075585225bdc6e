#include "tests/tokenizer/oracle_texts.h"

#include <random>

#include "model/tokenizer/unicode.h"

namespace dice::tokenizer {
namespace {

std::string utf8(std::initializer_list<char32_t> cps) {
  std::string s;
  for (char32_t c : cps) append_utf8(c, &s);
  return s;
}

}  // namespace

std::vector<std::string> adversarial_texts() {
  std::vector<std::string> t = {
      // emoji, ZWJ sequences, flags, modifiers, keycaps
      "Hello \xF0\x9F\x91\x8B\xF0\x9F\x8F\xBD world",
      "\xF0\x9F\x91\xA8\xE2\x80\x8D\xF0\x9F\x91\xA9\xE2\x80\x8D\xF0\x9F\x91\xA7\xE2\x80\x8D\xF0\x9F"
      "\x91\xA6 family",
      "\xF0\x9F\x87\xBA\xF0\x9F\x87\xB8\xF0\x9F\x87\xAF\xF0\x9F\x87\xB5 flags",
      "\xE2\x9D\xA4\xEF\xB8\x8F 1\xEF\xB8\x8F\xE2\x83\xA3 #\xE2\x83\xA3",
      // CJK, kana, Hangul (precomposed and as jamo)
      "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C\xEF\xBC\x81 kernel",
      "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE3\x83\x86\xE3\x82\xAD\xE3\x82\xB9\xE3\x83"
      "\x88",
      "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 " + utf8({0x1100, 0x1161, 0x11A8, 0x1102, 0x1165}),
      // Arabic with Arabic-Indic digits, Hebrew with points
      "\xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 "
      "\xD8\xA8\xD8\xA7\xD9\x84\xD8\xB9\xD8\xA7\xD9\x84\xD9"
      "\x85 \xD9\xA1\xD9\xA2\xD9\xA3",
      utf8({0x05E9, 0x05C1, 0x05B8, 0x05DC, 0x05D5, 0x05B9, 0x05DD}),
      // combining marks, reordering, singletons, excluded compositions
      "cafe\xCC\x81 na\xC3\xAFve",
      "a\xCC\x81\xCC\xA3",
      utf8({0x1E0B, 0x0323}),
      utf8({0x212B, 0x2126, 0x0344, 0x0F73, 0x0958, 0xFB01}),
      "Z" + utf8({0x0334, 0x0321, 0x032A, 0x032B, 0x0356, 0x0325, 0x0314, 0x033F, 0x0303}) + "algo",
      utf8({0x0301}) + "starts with a mark",
      // line endings
      "a\r\nb\rc\nd\r\n\r\n\re",
      "x \r\n y",
      "  \n\n  \t\n",
      "\r",
      "\n\n\n",
      "if x:\r\n\treturn 1\r\n",
      // whitespace runs and tabs
      std::string(1000, ' '),
      std::string(300, '\t') + "x",
      "x" + std::string(5000, ' ') + "y",
      std::string(200, '\n'),
      "\tdef f():\n\t\treturn 1\n",
      " \t \t x",
      "x \t",
      // numbers
      "12345678901234567890",
      "3.14159e-10 0x1F2E3D 1_000_000",
      "\xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4 \xC2\xB2\xC2\xB3 \xE2\x85\xAB",
      // contractions
      "it's IT'S we'LL they'Re I'M you'VE he'D don't",
      "'s'S'T'll",
      "'LLama 'sx",
      "don\xE2\x80\x99t",
      "'\xC5\xBF",  // curly apostrophe; long s (Rust folds it, JS does not)
      // invalid UTF-8
      "\xFF\xFE",
      "abc\x80"
      "def",
      "\xE2\x82",
      "\xED\xA0\x80 surrogate",
      "\xF0\x9F\x98 cut emoji",
      "\xC0\xAF overlong",
      "x\xF4\x90\x80\x80y",
      // special tokens in text
      "<|im_start|>user\nhi<|im_end|>\n",
      "<|endoftext|>",
      "<think>\n\n</think>\n\n",
      "<|MASK|><|MASK|>x",
      "<|im_start",
      "<|im_start|><|im_start|>",
      "a<|im_end|b",
      // odd spaces and controls
      utf8({0x85}) + "NEL",
      utf8({0xFEFF}) + "BOM",
      utf8({0xA0}) + "nbsp",
      utf8({0x3000}) + "wide",
      utf8({0x200B}) + " zero width",
      utf8({0x2028, 0x2029}) + "x",
      std::string("\0nul", 4),
      "\x01\x1F\x7F",
      // long runs of one symbol, long words
      std::string(500, '='),
      std::string(1000, '-') + "\n",
      std::string(3000, 'a'),
      "def na\xC3\xAFve_funci\xC3\xB3n(): return '\xC3\xB6k'  # \xE2\x88\x91 \xE2\x86\x92 \xCE\xBB",
  };
  return t;
}

std::vector<std::string> unicode_sweep() {
  std::vector<std::string> out;
  for (char32_t start = 0x20; start < 0x32000; start += 64) {
    if (start >= 0x3400 && start < 0x4DC0) start = 0x4DC0;     // CJK ext A: letters, like the rest
    if (start >= 0x4E00 && start < 0xA000) start = 0xA000;     // CJK unified: letters
    if (start >= 0xAC00 && start < 0xD7A4) start = 0xD780;     // Hangul syllables (a sample kept)
    if (start >= 0x20000 && start < 0x2FA00) start = 0x2FA00;  // CJK ext B..: letters
    std::string s;
    for (char32_t c = start; c < start + 64; ++c) {
      if (c < 0xD800 || c > 0xDFFF) append_utf8(c, &s);
    }
    if (!s.empty()) out.push_back(s);
  }
  const std::vector<char32_t> bases = {'a',    'e',    'o',    'u',   'A',   'E',   'S',
                                       's',    'z',    ' ',    0x3B1, 0x3C9, 0x416, 0x1100,
                                       0x1161, 0x11A8, 0xAC00, 0x928, 0x9C7, 0x9BE, 0xB47,
                                       0x3099, 0x304B, 0x5D0,  '1',   '\''};
  const std::vector<char32_t> marks = {0x300,  0x301,  0x302,  0x303,  0x308,  0x30A,  0x30C, 0x323,
                                       0x327,  0x328,  0x331,  0x345,  0x334,  0x5B4,  0x93C, 0x94D,
                                       0x3099, 0x309A, 0x1161, 0x11A8, 0x20D7, 0x1DCE, 0x200D};
  std::mt19937 rng(20261129);
  for (int i = 0; i < 3000; ++i) {
    std::string s;
    int n = 2 + static_cast<int>(rng() % 14);
    for (int k = 0; k < n; ++k) {
      bool mark = rng() % 2 == 0;
      append_utf8(mark ? marks[rng() % marks.size()] : bases[rng() % bases.size()], &s);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace dice::tokenizer
