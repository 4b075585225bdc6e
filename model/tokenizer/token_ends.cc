#include "model/tokenizer/token_ends.h"

namespace dice::tokenizer {

std::vector<std::uint32_t> token_text_ends(const Tokenizer& tokenizer,
                                           const std::vector<std::int32_t>& ids,
                                           const DecodeOptions& options, std::string_view text) {
  std::vector<std::uint32_t> ends;
  ends.reserve(ids.size());
  std::size_t end = 0;
  for (const std::int32_t id : ids) {
    std::string_view bytes;
    if (!(options.skip_special_tokens && tokenizer.is_special(id))) {
      bytes = tokenizer.token_bytes(id).value_or(std::string_view());
    }
    // The text must hold exactly these bytes here; otherwise the decode changed them.
    if (text.substr(end, bytes.size()) != bytes) return {};
    end += bytes.size();
    ends.push_back(static_cast<std::uint32_t>(end));
  }
  if (end != text.size()) return {};
  return ends;
}

}  // namespace dice::tokenizer
