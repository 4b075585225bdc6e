// A Qwen3 tokenizer pruned to the tokens a corpus uses: the small recipe's vocabulary
// (configs/models/sdar-tiny.yaml), so a model learned from scratch does not spend most of its
// parameters on 150k embedding rows it never sees.
//
// Kept: every token the texts encode to, every token those are merged from (so BPE on the corpus
// merges exactly as before and yields the same tokens), the 256 byte-level base tokens (so any
// text still encodes: where a merge is gone its parts stay), and the added tokens named. Ids are
// renumbered densely in the old ids' order, the added tokens after the vocabulary; <|MASK|> is
// added last when the source has none. Merges are kept in their order where both parts and the
// result are kept; everything else of the file (normalizer, pre-tokenizer, decoder) stays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::tokenizer {

struct PrunedTokenizer {
  std::string json;                      // the new tokenizer.json
  std::vector<std::int32_t> source_ids;  // by new id: the token's id in the source tokenizer
};

// `source_json` is a byte-level BPE tokenizer.json (`origin` names it in errors); `specials` the
// added tokens to keep, by content (<|im_start|>, <|im_end|>, <|endoftext|>). InvalidArgument
// for a file this cannot read, or a special the source lacks (other than <|MASK|>).
Result<PrunedTokenizer> prune_tokenizer(const std::string& source_json, const std::string& origin,
                                        const std::vector<std::string>& texts,
                                        const std::vector<std::string>& specials);

}  // namespace dice::tokenizer
