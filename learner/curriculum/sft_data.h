// The SFT data (learner.sft.data_file): a JSON array of PyTorch -> CUDA pairs or prompt/response
// pairs, tokenized as the rollout would see them. Each item is one of
//
//   {"pytorch_code": P, "cuda_code": C}      prompt: the end_to_end template with P as
//                                              {reference}; response: C in a ```python fence
//   {"pytorch_code": P, "prefix": A, "middle": M, "suffix": Z}
//                                            a phase-1 task: the infill template with P, A and
//                                              Z; response: the core M in a ```python fence
//   {"prompt": text, "response": text}        used as they are
//   {"prompt_ids": [..], "response_ids": [..]}  already tokenized (no tokenizer needed)
//
// Text prompts go through Qwen3's chat template (one user turn, generation prompt), and every
// text response ends with <|im_end|>, the stop token the sampler stops on. Items longer than
// max_length tokens are left out and counted, as DICE's SFT does.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/prompt_template.h"
#include "model/tokenizer/tokenizer.h"

namespace dice {

struct SftSample {
  std::string id;  // "id"/"idx" of the item, or its index
  std::vector<std::int64_t> prompt;
  std::vector<std::int64_t> response;
};

struct SftData {
  std::vector<SftSample> samples;
  std::size_t too_long = 0;  // items dropped for max_length
};

// `tokenizer` may be null when every item is pre-tokenized. InvalidArgument naming the file and
// the item for a malformed item (no known field pair, an empty response, a token id that is not
// a non-negative integer below `vocab_size` or is `mask_token_id`), or a text item without a
// tokenizer; NotFound / IOError for the file.
Result<SftData> load_sft_data(const std::string& path, const tokenizer::Tokenizer* tokenizer,
                              const std::map<TaskKind, PromptTemplate>& templates,
                              std::int64_t max_length, std::int64_t vocab_size,
                              std::int64_t mask_token_id);

}  // namespace dice
