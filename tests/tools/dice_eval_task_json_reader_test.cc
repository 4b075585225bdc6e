// tools/dice-eval/task_json_reader.h on the two files of the DICE release in data/dice-rl and
// on small bad files made for each test.
#include "tools/dice-eval/task_json_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "tests/support/temp_dir.h"

namespace dice::eval {
namespace {

const std::string kDataDir = DICE_RL_DATA_DIR;

TEST(DiceEvalTaskJsonReaderTest, ReadsTheEndToEndTasksOfTheRelease) {
  auto problems = read_task_json(kDataDir + "/end_to_end_kernel_generation_4000.json", {});
  ASSERT_TRUE(problems.ok()) << problems.status().to_string();
  ASSERT_EQ(problems->size(), 4000u);
  std::map<std::string, int> levels;
  std::set<std::string> ids;
  for (const Problem& p : *problems) {
    ++levels[p.level];
    ids.insert(p.id);
    EXPECT_EQ(p.kind, TaskKind::kEndToEnd);
    ASSERT_FALSE(p.pytorch_code.empty()) << p.origin;
  }
  EXPECT_EQ(ids.size(), 4000u);
  EXPECT_EQ(levels, (std::map<std::string, int>{{"0", 1}, {"1", 590}, {"2", 3407}, {"3", 2}}));
  EXPECT_EQ(problems->front().id, "0");  // "idx": 0, an integer
  EXPECT_EQ(problems->front().origin, kDataDir + "/end_to_end_kernel_generation_4000.json:[0]");
  // Written out for the learner: no reference answer comes along.
  const boost::json::object task = learner_task(problems->front());
  EXPECT_EQ(task.size(), 3u);  // id, level, pytorch_code
  EXPECT_FALSE(task.contains("cuda_code"));
}

TEST(DiceEvalTaskJsonReaderTest, ReadsTheInfillingTasksOfTheReleaseAsInfill) {
  auto problems = read_task_json(kDataDir + "/kernel_infilling_dev.json", {});
  ASSERT_TRUE(problems.ok()) << problems.status().to_string();
  ASSERT_EQ(problems->size(), 60u);
  for (const Problem& p : *problems) {
    EXPECT_EQ(p.kind, TaskKind::kInfill);
    EXPECT_EQ(p.level, "");  // the release names no level
    EXPECT_FALSE(p.prefix.empty());
    EXPECT_FALSE(p.suffix.empty());
  }
  const boost::json::object task = learner_task(problems->front());
  EXPECT_TRUE(task.contains("prefix") && task.contains("suffix"));
  EXPECT_FALSE(task.contains("middle"));  // the answer stays out
  auto leveled = read_task_json(kDataDir + "/kernel_infilling_dev.json", {std::nullopt, "1"});
  ASSERT_TRUE(leveled.ok());
  EXPECT_EQ(leveled->front().level, "1");
}

class DiceEvalTaskJsonBadFileTest : public ::testing::Test {
 protected:
  Status read(const std::string& text, TaskJsonOptions options = {}) {
    std::ofstream(dir_.sub("tasks.json")) << text;
    return read_task_json(dir_.sub("tasks.json"), options).status();
  }
  std::string where(const std::string& tail) { return dir_.sub("tasks.json") + tail; }
  testing_util::TempDir dir_{"dice-eval-json"};
};

TEST_F(DiceEvalTaskJsonBadFileTest, NamesTheFileAndTheItem) {
  EXPECT_EQ(read("{\"id\": 1}").message(),
            where(": expected a JSON array of tasks, got {\"id\":1}"));
  EXPECT_NE(read("[{\"id\": 1,}]").message().find(where(":1:")), std::string::npos);
  EXPECT_EQ(read("[]").message(), where(": the array holds no task"));
  EXPECT_EQ(read("[{\"id\": 1}]").message(), where(":[0]: missing \"pytorch_code\""));
  EXPECT_EQ(read("[{\"level\": \"1\", \"pytorch_code\": \"x\"}]").message(),
            where(":[0]: missing \"id\" (or \"idx\")"));
  EXPECT_EQ(read("[{\"id\": 1, \"pytorch_code\": \"x\"}, {\"idx\": \"1\", \"pytorch_code\": "
                 "\"y\"}]")
                .message(),
            where(":[1]: task id \"1\" already used at " + where(":[0]")));
  EXPECT_EQ(read("[{\"id\": 1, \"level\": 300, \"pytorch_code\": \"x\"}]").message(),
            where(":[0]: \"level\" must be 0..255, got \"300\""));
  EXPECT_EQ(read("[{\"id\": -1, \"pytorch_code\": \"x\"}]").message(),
            where(":[0]: \"id\" must be a string or a non-negative integer, got -1"));
  // An infill file (its first item has a skeleton) with an end-to-end item in it.
  EXPECT_NE(read("[{\"id\": 1, \"pytorch_code\": \"x\", \"prefix\": \"p\", \"suffix\": \"s\"}, "
                 "{\"id\": 2, \"pytorch_code\": \"y\"}]")
                .message()
                .find(where(":[1]: an infill task needs")),
            std::string::npos);
  // Asked to read an end-to-end file as infill.
  EXPECT_FALSE(read("[{\"id\": 1, \"pytorch_code\": \"x\"}]", {TaskKind::kInfill, ""}).ok());
  EXPECT_EQ(read_task_json(dir_.sub("nope.json"), {}).status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace dice::eval
