// Where each token of a response ends in its decoded text: what lets a reader of the reward log
// lay the denoising trace (one unmask step per token) over the response text without holding a
// tokenizer. The rollout worker computes it next to the decode that made the text.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "model/tokenizer/tokenizer.h"

namespace dice::tokenizer {

// Per id of `ids`, the byte offset in `text` where that token's bytes end, given that `text` is
// tokenizer.decode(ids, options). A special token skipped by the decode ends where the token
// before it did. An offset may fall inside a UTF-8 character that two tokens share (byte-level
// BPE splits rare characters). Empty when `text` is not the tokens' bytes joined: the decode
// replaced ill-formed UTF-8 (options.replace_invalid_utf8), and no offsets would fit the text.
std::vector<std::uint32_t> token_text_ends(const Tokenizer& tokenizer,
                                           const std::vector<std::int32_t>& ids,
                                           const DecodeOptions& options, std::string_view text);

}  // namespace dice::tokenizer
