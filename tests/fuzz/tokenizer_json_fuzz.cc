// libFuzzer target: loading a tokenizer.json (Tokenizer::from_json, which Tokenizer::load runs on
// the file's text), then encoding and decoding a short text with what loaded, so that tables a
// file got past the checks with are used once.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "model/tokenizer/tokenizer.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  dice::Result<dice::tokenizer::Tokenizer> tokenizer =
      dice::tokenizer::Tokenizer::from_json(json, "fuzz/tokenizer.json");
  if (!tokenizer.ok()) return 0;
  const std::vector<std::int32_t> ids =
      tokenizer->encode("<|im_start|>user\nhello world, caf\xc3\xa9 12345 <think>\n");
  tokenizer->decode(ids);
  return 0;
}
