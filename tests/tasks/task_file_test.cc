// tasks/task_file.h: each rule of a task file, on small files written for each case. The
// release's own files are read in tests/learner/curriculum/task_loader_test.cc and
// tests/tools/dice_eval_task_json_reader_test.cc, through the two readers built on this one.
#include "tasks/task_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace dice {
namespace {

class TaskFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::ofstream(path()) << text;
    return path();
  }
  std::string path() const { return dir_.sub("tasks.json"); }
  // The message of reading `text`, which must fail with InvalidArgument.
  std::string error_of(const std::string& text, const TaskFileOptions& options = {}) {
    auto read = read_task_file(write(text), options);
    if (read.ok()) return "(read fine)";
    EXPECT_EQ(read.status().code(), StatusCode::kInvalidArgument) << read.status().to_string();
    return read.status().message();
  }
  testing_util::TempDir dir_{"task-file"};
};

TEST_F(TaskFileTest, ReadsIdsLevelsAndTheKindOfTheFile) {
  auto tasks = read_task_file(write(R"([
      {"idx": 17, "level": "02", "pytorch_code": "a", "prefix": "ignored: end-to-end"},
      {"id": "x7", "level": 3, "idx": 9, "pytorch_code": "b", "cuda_code": "not read"},
      {"idx": "5", "pytorch_code": "c"}])"),
                              {schema::Phase::E2E, "1"});
  ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
  ASSERT_EQ(tasks->size(), 3u);
  const TaskFileEntry& first = (*tasks)[0];
  EXPECT_EQ(first.id, "17");
  EXPECT_EQ(first.level, "2");  // "02" and "2" are one level
  EXPECT_EQ(first.level_number, 2);
  EXPECT_EQ(first.phase, schema::Phase::E2E);
  EXPECT_EQ(first.prefix, "");  // named end-to-end: a skeleton in the file is not read
  EXPECT_EQ(first.origin, path() + ":[0]");
  EXPECT_EQ((*tasks)[1].id, "x7");  // "id" before "idx"
  EXPECT_EQ((*tasks)[1].level_number, 3);
  EXPECT_EQ((*tasks)[2].level, "1");  // the default level
  EXPECT_EQ((*tasks)[2].pytorch_code, "c");
}

TEST_F(TaskFileTest, AnInfillFileIsRecognisedByItsFirstItemOrNamedByTheCaller) {
  const std::string infill = R"([{"id": 1, "pytorch_code": "r", "prefix": "p", "suffix": ""}])";
  auto guessed = read_task_file(write(infill));
  ASSERT_TRUE(guessed.ok()) << guessed.status().to_string();
  EXPECT_EQ(guessed->front().phase, schema::Phase::INFILL);
  EXPECT_EQ(guessed->front().prefix, "p");
  EXPECT_EQ(guessed->front().level, "");
  auto as_e2e = read_task_file(write(infill), {schema::Phase::E2E, ""});
  ASSERT_TRUE(as_e2e.ok());
  EXPECT_EQ(as_e2e->front().prefix, "");  // an end-to-end task gets no skeleton
  EXPECT_TRUE(read_task_file(write("[]")).value().empty());
}

TEST_F(TaskFileTest, ShapeVariantsAreReadAndWrittenBackInTheirOrder) {
  auto tasks = read_task_file(write(R"([{"id": 1, "pytorch_code": "r",
      "shape_variants": [{"batch_size": 3}, {"dim": 129, "batch_size": 1}]}])"));
  ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
  EXPECT_EQ(tasks->front().shape_variants,
            (std::vector<ShapeVariant>{{{"batch_size", 3}}, {{"dim", 129}, {"batch_size", 1}}}));
  EXPECT_EQ(boost::json::serialize(shape_variants_json(tasks->front().shape_variants)),
            R"([{"batch_size":3},{"dim":129,"batch_size":1}])");
  EXPECT_TRUE(shape_variants_json({}).is_null());
}

TEST_F(TaskFileTest, EachBadItemIsNamedByFileIndexAndRule) {
  const std::string at = path() + ":[1]: ";
  const std::string ok = R"({"id": 0, "pytorch_code": "x"}, )";
  EXPECT_EQ(error_of("[" + ok + "3]"), at + "a task must be a JSON object");
  EXPECT_EQ(error_of("[" + ok + R"({"pytorch_code": "x"}])"), at + "missing \"id\" (or \"idx\")");
  EXPECT_EQ(error_of("[" + ok + R"({"id": -3, "pytorch_code": "x"}])"),
            at + "\"id\" must be a string or a non-negative integer, got -3");
  EXPECT_EQ(error_of("[" + ok + R"({"id": "", "pytorch_code": "x"}])"), at + "empty task id");
  EXPECT_EQ(error_of("[" + ok + R"({"id": "a\u0000b", "pytorch_code": "x"}])"),
            at + "task id holds a NUL byte");
  EXPECT_EQ(error_of("[" + ok + R"({"id": "0", "pytorch_code": "y"}])"),
            at + "task id \"0\" already used at " + path() + ":[0]");
  EXPECT_EQ(error_of("[" + ok + R"({"id": 1, "level": "hard", "pytorch_code": "x"}])"),
            at + "\"level\" must be 0..255, got \"hard\"");
  EXPECT_EQ(error_of("[" + ok + R"({"id": 1, "level": 256, "pytorch_code": "x"}])"),
            at + "\"level\" must be 0..255, got \"256\"");
  EXPECT_EQ(error_of("[" + ok + R"({"id": 1}])"), at + "missing \"pytorch_code\"");
  EXPECT_EQ(error_of("[" + ok + R"({"id": 1, "pytorch_code": ""}])"),
            at + "\"pytorch_code\" is empty");
  EXPECT_EQ(error_of("[" + ok + R"({"id": 1, "pytorch_code": 7}])"),
            at + "\"pytorch_code\" must be a string, got 7");
  EXPECT_EQ(error_of("[" + ok + R"({"id": 1, "pytorch_code": "x", "shape_variants": [{}]}])"),
            at + "shape_variants[0]: must be a non-empty object of size -> integer");
}

TEST_F(TaskFileTest, AnInfillTaskNeedsBothKeysAndSomeSkeleton) {
  const TaskFileOptions infill{schema::Phase::INFILL, ""};
  const std::string at = path() + ":[0]: ";
  EXPECT_EQ(error_of(R"([{"id": 1, "pytorch_code": "x", "prefix": "p"}])", infill),
            at + "missing \"suffix\"");
  EXPECT_EQ(error_of(R"([{"id": 1, "pytorch_code": "x", "prefix": 1, "suffix": "s"}])", infill),
            at + "\"prefix\" must be a string, got 1");
  EXPECT_NE(error_of(R"([{"id": 1, "pytorch_code": "x", "prefix": "", "suffix": ""}])", infill)
                .find(at + "an infill task needs a non-empty \"prefix\" or \"suffix\""),
            std::string::npos);
  EXPECT_NE(error_of(R"([{"id": 1, "pytorch_code": "x"}])", infill).find("an infill task needs"),
            std::string::npos);
}

TEST_F(TaskFileTest, BadFilesNameTheFile) {
  EXPECT_EQ(error_of(R"({"id": 1})"), path() + ": expected a JSON array of tasks, got {\"id\":1}");
  EXPECT_EQ(error_of("[\n  {\"id\": 1,,}\n]").rfind(path() + ":2:", 0), 0u);  // line:column
  EXPECT_EQ(error_of("[]", {std::nullopt, "300"}), "level '300': expected 0..255");
  auto missing = read_task_file(dir_.sub("nope.json"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find(dir_.sub("nope.json")), std::string::npos);
  EXPECT_TRUE(is_level_text("0") && is_level_text("255") && is_level_text("007"));
  EXPECT_FALSE(is_level_text("") || is_level_text("256") || is_level_text("1000") ||
               is_level_text("-1") || is_level_text("1a"));
}

}  // namespace
}  // namespace dice
