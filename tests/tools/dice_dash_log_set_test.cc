// LogSet over real reward logs: a log that appears later is opened, and a reader whose catch-up
// keeps failing (its log was replaced under it, as after a writer's crash and a fresh start) is
// dropped and opened again instead of serving the old view for ever.
#include "tools/dice-dash/log_set.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/remove_tree.h"
#include "tests/tools/dice_dash_test_util.h"

namespace dice::dash {
namespace {

// The run ids the view's reader lists ("" entries for a failed read).
std::vector<std::string> run_ids(const LogView& view) {
  std::vector<std::string> ids;
  if (view.reader == nullptr) return ids;
  auto runs = view.reader->runs();
  if (!runs.ok()) return {""};
  for (const auto& run : *runs) ids.emplace_back(run.get().getRunId().cStr());
  return ids;
}

void write_log(const std::string& path, const std::string& run_id) {
  auto writer = testing::open_writer(path);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->append({testing::run_record(run_id)}).ok());
  testing::write_steps(*writer, 0, 2);
  ASSERT_TRUE(writer->close().ok());
}

TEST(DiceDashLogSetTest, ALogThatAppearsLaterIsOpened) {
  testing_util::TempDir dir("dice-dash-log-set-test");
  const std::string path = dir.sub("log");
  LogSet logs({path}, std::chrono::milliseconds(0));
  EXPECT_EQ(logs.view(0).reader, nullptr);
  EXPECT_EQ(logs.view(0).status.code(), StatusCode::kNotFound) << logs.view(0).status.to_string();
  write_log(path, "run-a");
  EXPECT_EQ(run_ids(logs.view(0)), std::vector<std::string>{"run-a"});
}

TEST(DiceDashLogSetTest, AReaderThatCannotCatchUpIsOpenedAgain) {
  testing_util::TempDir dir("dice-dash-log-set-test");
  const std::string path = dir.sub("log");
  write_log(path, "run-a");
  LogSet logs({path}, std::chrono::milliseconds(0));
  ASSERT_EQ(run_ids(logs.view(0)), std::vector<std::string>{"run-a"});
  // The log is replaced by another one at the same path.
  ASSERT_TRUE(remove_tree(path).ok());
  write_log(path, "run-b");
  std::vector<std::string> seen;
  for (int i = 0; i < 10 && seen != std::vector<std::string>{"run-b"}; ++i) {
    seen = run_ids(logs.view(0));
  }
  EXPECT_EQ(seen, std::vector<std::string>{"run-b"});
}

}  // namespace
}  // namespace dice::dash
