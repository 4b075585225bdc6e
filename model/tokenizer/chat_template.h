// The Qwen3 chat template (the Jinja template in Qwen3's tokenizer_config.json, which SDAR's
// chat models keep), written out in C++ for the messages DICE sends: system, user, assistant
// and tool turns without tool calls or tool definitions.
//
//   <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{prompt}<|im_end|>\n
//   <|im_start|>assistant\n
//
// Thinking: with enable_thinking=false the generation prompt ends with an empty think block,
// "<think>\n\n</think>\n\n", exactly as the Jinja template does when `enable_thinking` is
// passed as false. DICE's prompts use the template's default (no `enable_thinking` passed),
// which adds nothing after "<|im_start|>assistant\n"; that is this API's default too.
// Assistant turns follow the template's rules: the reasoning in "<think>...</think>" is kept
// only for assistant turns after the last user query, and re-wrapped as
// "<think>\n{reasoning}\n</think>\n\n{answer}".
// The output is text with the control tokens spelled out; Tokenizer::encode turns them into
// their ids (it matches added tokens by default).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::tokenizer {

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
};

struct ChatTemplateOptions {
  // End with "<|im_start|>assistant\n" so the model writes the reply. Default: true
  bool add_generation_prompt = true;
  // false: append the empty think block after the generation prompt (Qwen3's switch for
  // "answer without reasoning"). true: the template's default, nothing appended. Default: true
  bool enable_thinking = true;
};

// Renders `messages`; an unknown role is an invalid-argument error naming the message index.
Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                        const ChatTemplateOptions& options = {});

// The same, with the two arguments of Hugging Face's apply_chat_template.
Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt);

class Tokenizer;

// The token ids of `user_text` as the model sees it when asked to answer: one user turn in the
// chat template with the generation prompt (what a rollout samples from, and what SFT trains
// the response after). InvalidArgument for an empty text.
Result<std::vector<std::int64_t>> encode_user_turn(const Tokenizer& tokenizer,
                                                   const std::string& user_text);

}  // namespace dice::tokenizer
