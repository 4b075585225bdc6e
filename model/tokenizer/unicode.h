// The Unicode pieces the Qwen tokenizer needs, without ICU: UTF-8 decoding with the WHATWG
// replacement rules, the character classes of the split regex, and NFC normalization.
// Data comes from unicode_tables.cc (see unicode_tables.h for the Unicode version).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace dice::tokenizer {

// Bits of a code point's class, as the split regex sees it.
enum CharClass : std::uint8_t {
  kClassLetter = 1,  // \p{L}
  kClassNumber = 2,  // \p{N}
  kClassSpace = 4,   // JavaScript's \s (includes \r and \n)
  kClassCrLf = 8,    // \r or \n
};

// The CharClass bits of `c` (0 for punctuation, symbols, marks, ...). O(1) below U+10000.
std::uint8_t char_class(char32_t c);

// The CharClass bits of every code point below U+10000, for loops that classify many.
const std::uint8_t* bmp_char_classes();

// Decodes one code point starting at s[*pos] and advances *pos. Ill-formed input gives U+FFFD
// for each maximal subpart of an ill-formed sequence (the WHATWG/Unicode "best practice" that
// node's TextDecoder and Buffer use), so every byte string decodes the way the oracle sees it.
char32_t decode_utf8(std::string_view s, std::size_t* pos);

// Appends the UTF-8 encoding of `c` (which must be a scalar value) to *out.
void append_utf8(char32_t c, std::string* out);

// True when s is well-formed UTF-8.
bool is_valid_utf8(std::string_view s);

// Writes s with every ill-formed sequence replaced by U+FFFD (as decode_utf8 does) to *out.
void replace_invalid_utf8(std::string_view s, std::string* out);

// NFC-normalizes well-formed UTF-8 `s` into *out and returns true; returns false and leaves
// *out alone when s is already NFC by a quick check (every code point below U+0300), which is
// the common case for code and English text.
bool nfc_normalize(std::string_view s, std::string* out);

// The Unicode version of the tables ("17.0").
const char* unicode_version();

}  // namespace dice::tokenizer
