#include "model/tokenizer/chat_template.h"

#include "model/tokenizer/tokenizer.h"

#include <string_view>

namespace dice::tokenizer {
namespace {

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";

bool starts_with(std::string_view s, std::string_view p) {
  return s.substr(0, p.size()) == p;
}
bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string_view lstrip_newlines(std::string_view s) {
  while (!s.empty() && s.front() == '\n') s.remove_prefix(1);
  return s;
}
std::string_view rstrip_newlines(std::string_view s) {
  while (!s.empty() && s.back() == '\n') s.remove_suffix(1);
  return s;
}

bool is_tool_response(std::string_view content) {
  return starts_with(content, "<tool_response>") && ends_with(content, "</tool_response>");
}

}  // namespace

Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                        const ChatTemplateOptions& options) {
  if (messages.empty()) return Status::invalid_argument("chat template: no messages");
  const std::size_t n = messages.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return Status::invalid_argument("chat template: messages[" + std::to_string(i) +
                                      "].role: unknown role \"" + role +
                                      "\" (system, user, assistant, tool)");
    }
  }

  // The last user turn that is a real query (not a wrapped tool response): reasoning is kept
  // only for assistant turns after it.
  std::size_t last_query = n - 1;
  for (std::size_t k = n; k-- > 0;) {
    if (messages[k].role == "user" && !is_tool_response(messages[k].content)) {
      last_query = k;
      break;
    }
  }

  std::string out;
  if (messages[0].role == "system") {
    out += "<|im_start|>system\n" + messages[0].content + "<|im_end|>\n";
  }
  for (std::size_t i = 0; i < n; ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user" || (m.role == "system" && i != 0)) {
      out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    } else if (m.role == "assistant") {
      std::string_view content = m.content;
      std::string_view reasoning;
      std::size_t close = content.find(kThinkClose);
      if (close != std::string_view::npos) {
        // The answer follows the last </think>; the reasoning is before the first </think>,
        // after the last <think> there.
        std::string_view before = rstrip_newlines(content.substr(0, close));
        std::size_t open = before.rfind(kThinkOpen);
        if (open != std::string_view::npos) before.remove_prefix(open + kThinkOpen.size());
        reasoning = lstrip_newlines(before);
        content = lstrip_newlines(content.substr(content.rfind(kThinkClose) + kThinkClose.size()));
      }
      out += "<|im_start|>assistant\n";
      if (i > last_query && (i + 1 == n || !reasoning.empty())) {
        out += "<think>\n";
        out += rstrip_newlines(lstrip_newlines(reasoning));
        out += "\n</think>\n\n";
        out += lstrip_newlines(content);
      } else {
        out += content;
      }
      out += "<|im_end|>\n";
    } else if (m.role == "tool") {
      if (i == 0 || messages[i - 1].role != "tool") out += "<|im_start|>user";
      out += "\n<tool_response>\n" + m.content + "\n</tool_response>";
      if (i + 1 == n || messages[i + 1].role != "tool") out += "<|im_end|>\n";
    }
  }
  if (options.add_generation_prompt) {
    out += "<|im_start|>assistant\n";
    if (!options.enable_thinking) out += "<think>\n\n</think>\n\n";
  }
  return out;
}

Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                        bool add_generation_prompt) {
  ChatTemplateOptions options;
  options.add_generation_prompt = add_generation_prompt;
  return apply_chat_template(messages, options);
}

Result<std::vector<std::int64_t>> encode_user_turn(const Tokenizer& tokenizer,
                                                   const std::string& user_text) {
  if (user_text.empty()) return Status::invalid_argument("empty prompt");
  DICE_ASSIGN_OR_RETURN(std::string text, apply_chat_template({{"user", user_text}}, true));
  std::vector<std::int32_t> ids = tokenizer.encode(text);
  return std::vector<std::int64_t>(ids.begin(), ids.end());
}

}  // namespace dice::tokenizer
