// GPT-2's byte-level alphabet: each of the 256 byte values stands for one printable character,
// so BPE vocabularies (Qwen's included) can spell any byte string in readable text. A space is
// "Ġ" (U+0120), a newline "Ċ" (U+010A). tokenizer.json stores vocab and merges in this alphabet.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace dice::tokenizer {

// The character that stands for each byte.
const std::array<char32_t, 256>& byte_to_char();

// The byte a character stands for, or -1 when it is not in the alphabet.
int char_to_byte(char32_t c);

// Converts a token spelled in the byte-level alphabet (UTF-8) to the raw bytes it stands for.
// Characters outside the alphabet are kept as their own UTF-8 bytes. Returns false when any was.
bool byte_level_to_bytes(std::string_view token, std::string* bytes);

// Spells raw bytes in the byte-level alphabet (UTF-8): the inverse of byte_level_to_bytes.
std::string bytes_to_byte_level(std::string_view bytes);

}  // namespace dice::tokenizer
