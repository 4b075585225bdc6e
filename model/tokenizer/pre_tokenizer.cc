#include "model/tokenizer/pre_tokenizer.h"

#include "model/tokenizer/unicode.h"

namespace dice::tokenizer {

const char kQwen2SplitPattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

namespace {

char32_t ascii_lower(char32_t c) {
  return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

// [^\s\p{L}\p{N}]: punctuation, symbols, marks, controls that are not whitespace.
bool is_other(std::uint8_t cls) {
  return (cls & (kClassSpace | kClassLetter | kClassNumber)) == 0;
}

// The end (exclusive, in code points) of the piece that starts at i; always > i.
std::size_t match_at(const char32_t* cp, const std::uint8_t* cls, std::size_t i, std::size_t n) {
  const char32_t c = cp[i];

  // 1. (?i:'s|'t|'re|'ve|'m|'ll|'d)
  if (c == '\'' && i + 1 < n) {
    char32_t c1 = ascii_lower(cp[i + 1]);
    if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return i + 2;
    if (i + 2 < n) {
      char32_t c2 = ascii_lower(cp[i + 2]);
      if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
        return i + 3;
      }
    }
  }

  // 2. [^\r\n\p{L}\p{N}]?\p{L}+ : letters, or one leading non-letter/number/newline + letters.
  std::size_t letters_from = n;
  if (cls[i] & kClassLetter) {
    letters_from = i;
  } else if (!(cls[i] & (kClassCrLf | kClassNumber)) && i + 1 < n && (cls[i + 1] & kClassLetter)) {
    letters_from = i + 1;
  }
  if (letters_from < n) {
    std::size_t j = letters_from + 1;
    while (j < n && (cls[j] & kClassLetter)) ++j;
    return j;
  }

  // 3. \p{N} : one number character.
  if (cls[i] & kClassNumber) return i + 1;

  // 4. " ?[^\s\p{L}\p{N}]+[\r\n]*"
  std::size_t j = i;
  if (c == ' ' && i + 1 < n && is_other(cls[i + 1])) j = i + 1;
  if (is_other(cls[j])) {
    while (j < n && is_other(cls[j])) ++j;
    while (j < n && (cls[j] & kClassCrLf)) ++j;
    return j;
  }

  // Only whitespace is left: cp[i] is \s. e = the end of its run.
  std::size_t e = i;
  while (e < n && (cls[e] & kClassSpace)) ++e;

  // 5. \s*[\r\n]+ : \s* backs off to the last newline of the run; [\r\n]+ takes just it.
  for (std::size_t k = e; k > i; --k) {
    if (cls[k - 1] & kClassCrLf) return k;
  }

  // 6. \s+(?!\S) : the whole run at the end of the text, else the run less its last character.
  if (e == n) return e;
  if (e - i >= 2) return e - 1;

  // 7. \s+
  return e;
}

}  // namespace

void split_qwen2(std::string_view text, SplitScratch* scratch, std::vector<Piece>* pieces) {
  std::vector<char32_t>& cps = scratch->code_points;
  std::vector<std::uint8_t>& cls = scratch->classes;
  std::vector<std::uint32_t>& offsets = scratch->offsets;
  cps.clear();
  cls.clear();
  offsets.clear();
  const std::uint8_t* bmp = bmp_char_classes();
  std::size_t pos = 0;
  while (pos < text.size()) {
    offsets.push_back(static_cast<std::uint32_t>(pos));
    const unsigned char byte = static_cast<unsigned char>(text[pos]);
    char32_t c = byte;
    if (byte < 0x80) {
      ++pos;
    } else {
      c = decode_utf8(text, &pos);
    }
    cps.push_back(c);
    cls.push_back(c < 0x10000 ? bmp[c] : char_class(c));
  }
  offsets.push_back(static_cast<std::uint32_t>(text.size()));

  const std::size_t n = cps.size();
  std::size_t i = 0;
  while (i < n) {
    std::size_t end = match_at(cps.data(), cls.data(), i, n);
    pieces->push_back({offsets[i], offsets[end]});
    i = end;
  }
}

}  // namespace dice::tokenizer
