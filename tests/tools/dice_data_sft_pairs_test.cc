// The input of dice-data build-sft (tools/dice-data/sft_pairs.h): pairs from a JSON array or JSON
// Lines, and errors that name the file, the item and the field.
#include "tools/dice-data/sft_pairs.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/tools/dice_data_test_util.h"

namespace dice::data {
namespace {

std::string error_of(const std::string& text, const std::string& where = "pairs.json") {
  auto r = parse_sft_pairs(text, where);
  EXPECT_FALSE(r.ok()) << text;
  return r.ok() ? "" : r.status().message();
}

TEST(DiceDataSftPairsTest, ArrayAndJsonLines) {
  auto pairs = parse_sft_pairs(
      R"([{"id": 7, "level": 2, "pytorch_code": "ref", "cuda_code": "cand",
           "shape_variants": [{"batch_size": 3}]},
          {"idx": "x", "level": "1", "pytorch_code": "r2", "cuda_code": "c2", "raw_answer": ""},
          {"pytorch_code": "r3", "cuda_code": "c3"}])",
      "pairs.json");
  ASSERT_TRUE(pairs.ok()) << pairs.status().to_string();
  ASSERT_EQ(pairs->size(), 3u);
  EXPECT_EQ((*pairs)[0].id, "7");
  EXPECT_EQ((*pairs)[0].level, "2");
  ASSERT_EQ((*pairs)[0].shape_variants.size(), 1u);
  EXPECT_EQ((*pairs)[1].id, "x");
  EXPECT_EQ((*pairs)[1].level, "1");
  EXPECT_EQ((*pairs)[2].id, "item-2");
  EXPECT_EQ((*pairs)[2].level, "");
  // The hash covers what is judged: another shape variant is another pair.
  auto lines = parse_sft_pairs(
      "{\"id\": 7, \"pytorch_code\": \"ref\", \"cuda_code\": \"cand\"}\n\n"
      "{\"id\": 8, \"pytorch_code\": \"ref\", \"cuda_code\": \"cand\"}\n",
      "pairs.jsonl");
  ASSERT_TRUE(lines.ok()) << lines.status().to_string();
  ASSERT_EQ(lines->size(), 2u);
  EXPECT_NE((*lines)[0].hash, (*pairs)[0].hash);
  EXPECT_EQ((*lines)[0].hash, (*lines)[1].hash);
  const JudgeItem item = judge_item((*pairs)[0]);
  EXPECT_EQ(item.id, "7");
  EXPECT_FALSE(item.infill);
  EXPECT_EQ(item.reference, "ref");
  EXPECT_EQ(item.full_source, "cand");
  EXPECT_EQ(item.shape_variants.size(), 1u);
}

TEST(DiceDataSftPairsTest, ErrorsNameFileItemAndField) {
  EXPECT_EQ(error_of("  \n"), "pairs.json: empty file: no pairs");
  EXPECT_EQ(error_of("[]"), "pairs.json: no pairs in the file");
  EXPECT_NE(error_of("[{\"id\": 1,]").find("pairs.json:1:"), std::string::npos);
  EXPECT_NE(error_of("{\"id\": 1}\n{oops}\n", "p.jsonl").find("p.jsonl:2:"), std::string::npos);
  const std::string all = error_of(R"([
    {"id": 1, "pytorch_code": "r"},
    {"id": 2, "pytorch_code": "r", "cuda_code": 5},
    {"id": 3, "pytorch_code": "", "cuda_code": "c"},
    [1],
    {"id": [1], "pytorch_code": "r", "cuda_code": "c"},
    {"id": 6, "pytorch_code": "r", "cuda_code": "c", "shape_variants": [{"n": "x"}]},
    {"id": 7, "pytorch_code": "r", "cuda_code": "c"},
    {"id": 7, "pytorch_code": "r", "cuda_code": "d"},
    {"id": 9, "level": [], "pytorch_code": "r", "cuda_code": "c"}])");
  for (const char* want : {
           "pairs.json: 8 of 9 items are not pairs:",
           "pairs.json: item 0 (id 1): \"cuda_code\" is missing",
           "pairs.json: item 1 (id 2): \"cuda_code\" is not a string",
           "pairs.json: item 2 (id 3): \"pytorch_code\" is empty",
           "pairs.json: item 3: not a JSON object",
           "pairs.json: item 4: \"id\" must be a non-empty string or an integer",
           "pairs.json: item 5 (id 6): shape_variants[0]",
           "pairs.json: item 7 (id 7): the id of item 6 again",
           "pairs.json: item 8 (id 9): \"level\" must be a string or an integer",
       }) {
    EXPECT_NE(all.find(want), std::string::npos) << want << "\nin:\n" << all;
  }
  // JSON Lines name the line.
  EXPECT_NE(error_of("{\"id\": 1, \"pytorch_code\": \"r\", \"cuda_code\": \"c\"}\n\n{\"id\": 2}\n",
                     "p.jsonl")
                .find("p.jsonl:3: item 1 (id 2): \"pytorch_code\" is missing"),
            std::string::npos);
}

TEST(DiceDataSftPairsTest, TheDiceReleaseFiles) {
  // The infilling dev set: 60 pairs with their published, correct candidates.
  const std::string dev = DICE_RL_DATA_DIR "/kernel_infilling_dev.json";
  auto pairs = parse_sft_pairs(testing::read_text(dev), dev);
  ASSERT_TRUE(pairs.ok()) << pairs.status().to_string();
  EXPECT_EQ(pairs->size(), 60u);
  // The end-to-end RL tasks carry no candidate (cuda_code ""): not pairs, and said so.
  const std::string e2e = DICE_RL_DATA_DIR "/end_to_end_kernel_generation_4000.json";
  auto tasks = parse_sft_pairs(testing::read_text(e2e), e2e);
  ASSERT_FALSE(tasks.ok());
  EXPECT_NE(tasks.status().message().find("4000 of 4000 items are not pairs"), std::string::npos)
      << tasks.status().message().substr(0, 300);
  EXPECT_NE(tasks.status().message().find("\"cuda_code\" is empty"), std::string::npos);
}

}  // namespace
}  // namespace dice::data
