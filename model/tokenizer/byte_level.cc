#include "model/tokenizer/byte_level.h"

#include "model/tokenizer/unicode.h"

namespace dice::tokenizer {

const std::array<char32_t, 256>& byte_to_char() {
  // Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') stand for themselves; the other 68
  // (controls, space, DEL, NBSP, soft hyphen) take U+0100, U+0101, ... in byte order.
  static const std::array<char32_t, 256> kTable = [] {
    std::array<char32_t, 256> out{};
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      out[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return out;
  }();
  return kTable;
}

int char_to_byte(char32_t c) {
  // The alphabet lies within U+0021..U+0143.
  static const std::array<short, 0x144> kTable = [] {
    std::array<short, 0x144> out{};
    out.fill(-1);
    for (int b = 0; b < 256; ++b) out[byte_to_char()[b]] = static_cast<short>(b);
    return out;
  }();
  return c < kTable.size() ? kTable[c] : -1;
}

bool byte_level_to_bytes(std::string_view token, std::string* bytes) {
  bytes->clear();
  bool all_in_alphabet = true;
  std::size_t pos = 0;
  while (pos < token.size()) {
    std::size_t start = pos;
    char32_t c = decode_utf8(token, &pos);
    int b = char_to_byte(c);
    if (b >= 0) {
      bytes->push_back(static_cast<char>(b));
    } else {
      bytes->append(token.substr(start, pos - start));
      all_in_alphabet = false;
    }
  }
  return all_in_alphabet;
}

std::string bytes_to_byte_level(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char ch : bytes) append_utf8(byte_to_char()[static_cast<unsigned char>(ch)], &out);
  return out;
}

}  // namespace dice::tokenizer
