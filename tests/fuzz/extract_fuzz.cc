// libFuzzer target: the candidate extractor (extract_candidate, the first step of the reward
// pipeline on a model's response). Input: the response alone (phase 2, end-to-end), or
// "prefix\0suffix\0response" (phase 1, infill, when the input holds two NUL bytes).
//
// Checked beyond "no crash": a success carries a candidate file (an empty block is a failure).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "reward/extract.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string_view prefix, suffix, response = input;
  const std::size_t first = input.find('\0');
  const std::size_t second = first == std::string_view::npos ? first : input.find('\0', first + 1);
  if (second != std::string_view::npos) {
    prefix = input.substr(0, first);
    suffix = input.substr(first + 1, second - first - 1);
    response = input.substr(second + 1);
  }
  dice::first_code_block(response);
  const dice::ExtractedSource extracted = dice::extract_candidate(response, prefix, suffix);
  if (extracted.failure == dice::schema::FailureClass::NONE && extracted.source.empty()) {
    std::abort();
  }
  return 0;
}
