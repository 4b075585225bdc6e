// common/json/json_file.h: a JSON file a person writes comes back parsed, a syntax error names the
// file, line and column (of the byte where parsing stopped), a missing file keeps read_file's code,
// and a string member is found, defaulted or refused with an error that names the member.
#include "common/json/json_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace dice {
namespace {

TEST(JsonFileTest, ReadsTheDocumentOfAFile) {
  testing_util::TempDir dir("json-file");
  std::ofstream(dir.sub("tasks.json")) << "[\n  {\"id\": 7}\n]\n";
  auto root = read_json_file(dir.sub("tasks.json"));
  ASSERT_TRUE(root.ok()) << root.status().to_string();
  ASSERT_TRUE(root->is_array());
  EXPECT_EQ(root->get_array().at(0).at("id").as_int64(), 7);
}

TEST(JsonFileTest, ASyntaxErrorNamesFileLineAndColumn) {
  testing_util::TempDir dir("json-file");
  std::ofstream(dir.sub("bad.json")) << "[\n  {\"id\": 1,,}\n]\n";
  auto root = read_json_file(dir.sub("bad.json"));
  EXPECT_EQ(root.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(root.status().message().rfind(dir.sub("bad.json") + ":2:12: not JSON: ", 0), 0u)
      << root.status().message();
  std::ofstream(dir.sub("two.json")) << "{} {}";
  EXPECT_EQ(read_json_file(dir.sub("two.json")).status().code(), StatusCode::kInvalidArgument);
}

TEST(JsonFileTest, AMissingFileIsNotFound) {
  testing_util::TempDir dir("json-file");
  auto root = read_json_file(dir.sub("nope.json"));
  EXPECT_EQ(root.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(root.status().message(), dir.sub("nope.json") + ": no such file");
}

TEST(JsonFileTest, StringMembersAreStrict) {
  const boost::json::object item{{"code", "x = 1"}, {"level", 2}};
  EXPECT_EQ(json_string_member(item, "code", true, "f:[0]").value(), "x = 1");
  EXPECT_EQ(json_string_member(item, "prefix", false, "f:[0]").value(), "");
  EXPECT_EQ(json_string_member(item, "prefix", true, "f:[0]").status().message(),
            "f:[0]: missing \"prefix\"");
  auto wrong = json_string_member(item, "level", false, "f:[0]");
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message(), "f:[0]: \"level\" must be a string, got 2");
}

}  // namespace
}  // namespace dice
