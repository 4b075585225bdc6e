// libFuzzer target: the tokenizer on text (the repository's small tokenizer.json, loaded once).
// The first byte picks encoding (odd: added tokens cut out first, even: untrusted text, encoded
// as plain characters) or, when it is 0xff, decoding the rest as little-endian int32 ids.
//
// Checked beyond "no crash": ASCII text (well-formed and NFC by construction) encoded without
// added-token matching decodes back to itself (tokenizer.h: decode(encode(s)) == s).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace dice::fuzz {
namespace {

const tokenizer::Tokenizer& fixture() {
  static const tokenizer::Tokenizer* loaded = [] {
    Result<tokenizer::Tokenizer> t =
        tokenizer::Tokenizer::load(DICE_TOKENIZER_TESTDATA "/tiny_tokenizer.json");
    if (!t.ok()) std::abort();
    return new tokenizer::Tokenizer(std::move(t).value());
  }();
  return *loaded;
}

bool is_ascii(std::string_view text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  }
  return true;
}

void decode_ids(std::string_view bytes) {
  std::vector<std::int32_t> ids(bytes.size() / sizeof(std::int32_t));
  if (!ids.empty()) std::memcpy(ids.data(), bytes.data(), ids.size() * sizeof(std::int32_t));
  fixture().decode(ids);
  fixture().decode(ids, {/*skip_special_tokens=*/true, /*replace_invalid_utf8=*/true});
}

void encode_text(std::string_view text, bool match_added_tokens) {
  const std::vector<std::int32_t> ids = fixture().encode(text, {match_added_tokens});
  const std::string back = fixture().decode(ids);
  if (!match_added_tokens && is_ascii(text) && back != text) std::abort();
}

}  // namespace
}  // namespace dice::fuzz

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] == 0xff) {
    dice::fuzz::decode_ids(rest);
  } else {
    dice::fuzz::encode_text(rest, data[0] % 2 == 1);
  }
  return 0;
}
