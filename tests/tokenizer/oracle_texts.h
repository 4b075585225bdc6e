// Text for the oracle comparison (tokenizer_oracle_test.cc): hand-picked hard cases, and a
// sweep of the Unicode code space.
#pragma once

#include <string>
#include <vector>

namespace dice::tokenizer {

// Emoji (ZWJ sequences, flags, keycaps), CJK, Hangul, Arabic, Hebrew, combining marks, line
// endings, whitespace runs, tabs, long numbers, contractions, invalid UTF-8, special tokens,
// odd spaces and controls, long runs of one character.
std::vector<std::string> adversarial_texts();

// The code space in runs of 64 consecutive code points, plus random strings over bases and
// marks that exercise NFC composition and reordering (fixed seed).
std::vector<std::string> unicode_sweep();

}  // namespace dice::tokenizer
