#include "model/tokenizer/unicode.h"

#include <algorithm>
#include <array>

#include "model/tokenizer/unicode_tables.h"

namespace dice::tokenizer {
namespace {

namespace t = tables;

constexpr char32_t kReplacement = 0xFFFD;

// Hangul syllables compose and decompose arithmetically (Unicode 3.12).
constexpr char32_t kHangulS = 0xAC00, kHangulL = 0x1100, kHangulV = 0x1161, kHangulT = 0x11A7;
constexpr char32_t kHangulLCount = 19, kHangulVCount = 21, kHangulTCount = 28;
constexpr char32_t kHangulNCount = kHangulVCount * kHangulTCount;
constexpr char32_t kHangulSCount = kHangulLCount * kHangulNCount;

bool in_ranges(const t::CodePointRange* ranges, std::size_t n, char32_t c) {
  const t::CodePointRange* end = ranges + n;
  const t::CodePointRange* it = std::upper_bound(
      ranges, end, c, [](char32_t v, const t::CodePointRange& r) { return v < r.first; });
  return it != ranges && c <= (it - 1)->last;
}

std::uint8_t compute_class(char32_t c) {
  std::uint8_t bits = 0;
  if (in_ranges(t::kLetterRanges, t::kLetterRangesSize, c)) bits |= kClassLetter;
  if (in_ranges(t::kNumberRanges, t::kNumberRangesSize, c)) bits |= kClassNumber;
  if (in_ranges(t::kSpaceRanges, t::kSpaceRangesSize, c)) bits |= kClassSpace;
  if (c == '\r' || c == '\n') bits |= kClassCrLf;
  return bits;
}

// Classes of the whole BMP, built once (64 KiB): the split scanner asks for every code point.
const std::array<std::uint8_t, 0x10000>& bmp_classes() {
  static const std::array<std::uint8_t, 0x10000> kTable = [] {
    std::array<std::uint8_t, 0x10000> out{};
    for (char32_t c = 0; c < 0x10000; ++c) out[c] = compute_class(c);
    return out;
  }();
  return kTable;
}

std::uint8_t combining_rank(char32_t c) {
  if (c < 0x300) return 0;
  const t::CombiningRankRange* begin = t::kCombiningRankRanges;
  const t::CombiningRankRange* end = begin + t::kCombiningRankRangesSize;
  const t::CombiningRankRange* it = std::upper_bound(
      begin, end, c, [](char32_t v, const t::CombiningRankRange& r) { return v < r.first; });
  if (it == begin || c > (it - 1)->last) return 0;
  return (it - 1)->rank;
}

void decompose(char32_t c, std::vector<char32_t>* out) {
  if (c >= kHangulS && c < kHangulS + kHangulSCount) {
    char32_t s = c - kHangulS;
    out->push_back(kHangulL + s / kHangulNCount);
    out->push_back(kHangulV + (s % kHangulNCount) / kHangulTCount);
    if (s % kHangulTCount != 0) out->push_back(kHangulT + s % kHangulTCount);
    return;
  }
  const t::Decomposition* begin = t::kDecompositions;
  const t::Decomposition* end = begin + t::kDecompositionsSize;
  const t::Decomposition* it = std::lower_bound(
      begin, end, c, [](const t::Decomposition& d, char32_t v) { return d.code_point < v; });
  if (it == end || it->code_point != c) {
    out->push_back(c);
    return;
  }
  out->insert(out->end(), t::kDecompositionPool + it->offset,
              t::kDecompositionPool + it->offset + it->length);
}

// The primary composite of (a, b), or 0 when there is none.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kHangulL && a < kHangulL + kHangulLCount && b >= kHangulV &&
      b < kHangulV + kHangulVCount) {
    return kHangulS + ((a - kHangulL) * kHangulVCount + (b - kHangulV)) * kHangulTCount;
  }
  if (a >= kHangulS && a < kHangulS + kHangulSCount && (a - kHangulS) % kHangulTCount == 0 &&
      b > kHangulT && b < kHangulT + kHangulTCount) {
    return a + (b - kHangulT);
  }
  const t::Composition* begin = t::kCompositions;
  const t::Composition* end = begin + t::kCompositionsSize;
  const t::Composition* it =
      std::lower_bound(begin, end, std::make_pair(a, b), [](const t::Composition& x, auto key) {
        return x.first < key.first || (x.first == key.first && x.second < key.second);
      });
  if (it == end || it->first != a || it->second != b) return 0;
  return it->composite;
}

}  // namespace

std::uint8_t char_class(char32_t c) {
  if (c < 0x10000) return bmp_classes()[c];
  return compute_class(c);
}

const std::uint8_t* bmp_char_classes() {
  return bmp_classes().data();
}

char32_t decode_utf8(std::string_view s, std::size_t* pos) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  std::size_t i = *pos;
  unsigned char b0 = byte(i);
  if (b0 < 0x80) {
    *pos = i + 1;
    return b0;
  }
  // Length and the allowed range of the second byte (Unicode Table 3-7).
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  char32_t c = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
    c = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    c = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    c = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    *pos = i + 1;  // a continuation byte or a byte that never starts a sequence
    return kReplacement;
  }
  ++i;
  for (std::size_t k = 0; k < need; ++k, ++i) {
    if (i >= s.size()) {
      *pos = i;
      return kReplacement;
    }
    unsigned char b = byte(i);
    if (b < lo || b > hi) {
      *pos = i;  // the maximal subpart ends before the offending byte
      return kReplacement;
    }
    lo = 0x80;
    hi = 0xBF;
    c = (c << 6) | (b & 0x3F);
  }
  *pos = i;
  return c;
}

void append_utf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view s) {
  std::size_t pos = 0;
  while (pos < s.size()) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
      continue;
    }
    std::size_t start = pos;
    char32_t c = decode_utf8(s, &pos);
    // U+FFFD itself is three bytes; a replacement for bad bytes never is exactly "EF BF BD".
    if (c == kReplacement && s.substr(start, pos - start) != "\xEF\xBF\xBD") return false;
  }
  return true;
}

void replace_invalid_utf8(std::string_view s, std::string* out) {
  out->clear();
  out->reserve(s.size() + 8);
  std::size_t pos = 0;
  while (pos < s.size()) {
    unsigned char b = static_cast<unsigned char>(s[pos]);
    if (b < 0x80) {
      out->push_back(static_cast<char>(b));
      ++pos;
      continue;
    }
    append_utf8(decode_utf8(s, &pos), out);
  }
}

bool nfc_normalize(std::string_view s, std::string* out) {
  // Quick check: code points below U+0300 are NFC and never combine with what precedes them.
  // In UTF-8 they are exactly the bytes below 0xCC (0xCC 0x80 is U+0300).
  bool quick = true;
  for (char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0xCC) {
      quick = false;
      break;
    }
  }
  if (quick) return false;

  // 1. Full canonical decomposition.
  std::vector<char32_t> buf;
  buf.reserve(s.size());
  std::size_t pos = 0;
  while (pos < s.size()) decompose(decode_utf8(s, &pos), &buf);

  // 2. Canonical ordering: a stable sort of every run of non-starters by combining class.
  std::vector<std::uint8_t> ranks(buf.size());
  for (std::size_t i = 0; i < buf.size(); ++i) ranks[i] = combining_rank(buf[i]);
  for (std::size_t i = 1; i < buf.size(); ++i) {
    for (std::size_t j = i; j > 0 && ranks[j] != 0 && ranks[j - 1] > ranks[j]; --j) {
      std::swap(buf[j], buf[j - 1]);
      std::swap(ranks[j], ranks[j - 1]);
    }
  }

  // 3. Canonical composition (UAX #15): a character joins the last starter unless a character
  // between them blocks it (a starter, or a mark of the same or higher class).
  std::size_t out_len = 0;
  std::size_t starter = 0;     // index in buf of the last starter kept
  bool have_starter = false;   // false while only non-starters have been kept
  std::uint8_t last_rank = 0;  // rank of the last character kept
  for (std::size_t i = 0; i < buf.size(); ++i) {
    char32_t c = buf[i];
    std::uint8_t rank = ranks[i];
    if (have_starter) {
      // Marks kept since the starter are in class order, so the last one has the highest class.
      bool adjacent = out_len == starter + 1;
      if (adjacent || last_rank < rank) {
        char32_t composite = compose(buf[starter], c);
        if (composite != 0) {
          buf[starter] = composite;
          continue;
        }
      }
    }
    if (rank == 0) {
      starter = out_len;
      have_starter = true;
    }
    last_rank = rank;
    buf[out_len++] = c;
  }

  out->clear();
  out->reserve(s.size() + 8);
  for (std::size_t i = 0; i < out_len; ++i) append_utf8(buf[i], out);
  return true;
}

const char* unicode_version() {
  return tables::kUnicodeVersion;
}

}  // namespace dice::tokenizer
