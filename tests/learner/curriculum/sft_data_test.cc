// load_sft_data: the four item forms, the length cut, and errors that name the item.
#include "learner/curriculum/sft_data.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "model/tokenizer/chat_template.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

class SftDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("dice_sft_data_" + std::to_string(::getpid()) + ".json"))
                .string();
    for (TaskKind kind : {TaskKind::kEndToEnd, TaskKind::kInfill}) {
      auto tmpl = PromptTemplate::builtin(kind);
      ASSERT_TRUE(tmpl.ok()) << tmpl.status().to_string();
      templates_.emplace(kind, std::move(tmpl).value());
    }
    auto tok =
        tokenizer::Tokenizer::load(std::string(DICE_TOKENIZER_TESTDATA) + "/tiny_tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().to_string();
    tokenizer_ = std::make_unique<tokenizer::Tokenizer>(std::move(tok).value());
  }
  void TearDown() override { fs::remove(path_); }
  Result<SftData> load(const std::string& json, std::int64_t max_length = 100000,
                       bool with_tokenizer = true) {
    std::ofstream(path_) << json;
    return load_sft_data(path_, with_tokenizer ? tokenizer_.get() : nullptr, templates_, max_length,
                         /*vocab_size=*/300, /*mask_token_id=*/299);
  }
  std::string path_;
  std::map<TaskKind, PromptTemplate> templates_;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer_;
};

TEST_F(SftDataTest, PreTokenizedItemsNeedNoTokenizer) {
  auto data = load(R"([{"id": "a", "prompt_ids": [1, 2, 3], "response_ids": [4, 5]},
                       {"prompt_ids": [7], "response_ids": [8, 9, 10]}])",
                   100000, /*with_tokenizer=*/false);
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  ASSERT_EQ(data->samples.size(), 2u);
  EXPECT_EQ(data->samples[0].id, "a");
  EXPECT_EQ(data->samples[0].prompt, (std::vector<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(data->samples[1].id, "1");
  EXPECT_EQ(data->samples[1].response, (std::vector<std::int64_t>{8, 9, 10}));
}

TEST_F(SftDataTest, TextItemsGoThroughTheChatTemplateAndEndWithImEnd) {
  auto data = load(R"([{"prompt": "hi", "response": "ok"},
                       {"idx": 5, "pytorch_code": "import torch", "cuda_code": "x = 1"}])");
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  ASSERT_EQ(data->samples.size(), 2u);
  auto prompt = tokenizer::encode_user_turn(*tokenizer_, "hi");
  ASSERT_TRUE(prompt.ok());
  EXPECT_EQ(data->samples[0].prompt, *prompt);
  EXPECT_EQ(data->samples[0].response.back(), 273);  // <|im_end|>
  // The pair's response is the code in a fence; its prompt is the end_to_end template's.
  std::vector<std::int32_t> fenced = tokenizer_->encode("```python\nx = 1\n```<|im_end|>");
  EXPECT_EQ(data->samples[1].response, std::vector<std::int64_t>(fenced.begin(), fenced.end()));
  PromptFields fields;
  fields.reference = "import torch";
  fields.task_id = "5";
  auto rendered =
      tokenizer::encode_user_turn(*tokenizer_, templates_.at(TaskKind::kEndToEnd).render(fields));
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(data->samples[1].prompt, *rendered);
}

// A phase-1 task with its core: the infill template's prompt, the core as the answer.
TEST_F(SftDataTest, InfillItemsAnswerTheCoreUnderTheInfillTemplate) {
  auto data = load(R"([{"id": "i1", "pytorch_code": "import torch", "prefix": "import torch\n",
                        "middle": "src = 1", "suffix": "\nm = 2\n", "cuda_code": "ignored"}])");
  ASSERT_TRUE(data.ok()) << data.status().to_string();
  ASSERT_EQ(data->samples.size(), 1u);
  std::vector<std::int32_t> fenced = tokenizer_->encode("```python\nsrc = 1\n```<|im_end|>");
  EXPECT_EQ(data->samples[0].response, std::vector<std::int64_t>(fenced.begin(), fenced.end()));
  PromptFields fields;
  fields.reference = "import torch";
  fields.prefix = "import torch\n";
  fields.suffix = "\nm = 2\n";
  fields.task_id = "i1";
  auto rendered =
      tokenizer::encode_user_turn(*tokenizer_, templates_.at(TaskKind::kInfill).render(fields));
  ASSERT_TRUE(rendered.ok());
  EXPECT_EQ(data->samples[0].prompt, *rendered);
  auto bad =
      load(R"([{"id": "i2", "pytorch_code": "p", "prefix": "a", "middle": "", "suffix": "z"}])");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("(id i2): \"middle\" is empty"), std::string::npos)
      << bad.status().to_string();
}

TEST_F(SftDataTest, ItemsLongerThanMaxLengthAreCountedAndLeftOut) {
  auto data = load(R"([{"prompt_ids": [1, 2], "response_ids": [3]},
                       {"prompt_ids": [1, 2, 3], "response_ids": [4, 5]}])",
                   4);
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->samples.size(), 1u);
  EXPECT_EQ(data->too_long, 1u);
}

TEST_F(SftDataTest, BadItemsAreNamed) {
  auto expect_error = [&](const std::string& json, const std::string& needle,
                          bool with_tokenizer = true) {
    auto data = load(json, 100000, with_tokenizer);
    EXPECT_EQ(data.status().code(), StatusCode::kInvalidArgument) << json;
    EXPECT_NE(data.status().to_string().find(needle), std::string::npos)
        << data.status().to_string();
  };
  expect_error(R"({"prompt": "x"})", "expected a JSON array");
  expect_error(R"([{"prompt_ids": [1], "response_ids": [299]}])",
               "item 0: \"response_ids\"[0] = 299 is not a token id");
  expect_error(R"([{"prompt_ids": [1], "response_ids": [-3]}])", "is not a token id");
  expect_error(R"([{"prompt_ids": [1]}])", "\"response_ids\" must be an array");
  expect_error(R"([{"x": 1}, {"y": 2}])", "item 0: expected pytorch_code + cuda_code");
  expect_error(R"([{"idx": 7, "pytorch_code": "p", "cuda_code": ""}])",
               "item 0 (idx 7): \"cuda_code\" is empty");
  expect_error(R"([{"prompt": "a", "response": "b"}])", "needs the model's tokenizer.json",
               /*with_tokenizer=*/false);
  expect_error(R"([{"prompt_ids": [], "response_ids": [1]}])", "empty prompt or response");
  expect_error("[{", "SFT data: " + path_ + ":1:3: not JSON");
}

}  // namespace
}  // namespace dice
