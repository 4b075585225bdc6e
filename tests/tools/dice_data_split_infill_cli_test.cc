// dice-data split-infill as a process (tools/dice-data/split_infill_command.h): what it writes to
// standard output or --out, and its exit status: 0 written, 1 a file that cannot be read, split
// or written (nothing written then), 2 bad arguments.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/json/parse_text.h"
#include "tests/support/temp_dir.h"
#include "tests/tools/dice_data_test_util.h"

namespace dice::data {
namespace {

namespace json = boost::json;
using testing::kCandidate;
using testing::quoted;
using testing::Ran;
using testing::read_text;
using testing::run;
using testing::str;

const std::string kDev = DICE_RL_DATA_DIR "/kernel_infilling_dev.json";

std::string split_infill(const std::string& args) {
  return quoted(DICE_DATA_EXE) + " split-infill " + args;
}

class TempDir : public testing_util::TempDir {
 public:
  TempDir() : testing_util::TempDir("dice-data-split-test") {}
};

json::value parsed(const std::string& text) {
  boost::system::error_code ec;
  std::string position;
  json::value v = parse_json_text(text, &ec, &position);
  EXPECT_FALSE(ec) << ec.message() << " at " << position << " in: " << text.substr(0, 300);
  return v;
}

TEST(DiceDataSplitInfillCliTest, CandidateToStandardOutput) {
  TempDir dir;
  std::ofstream(dir.sub("k.py"), std::ios::binary) << kCandidate;
  const Ran r = run(split_infill("--candidate " + quoted(dir.sub("k.py"))), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json::value v = parsed(r.output);
  ASSERT_TRUE(v.is_object());
  const json::object& o = v.get_object();
  EXPECT_EQ(o.size(), 3u);
  EXPECT_EQ(str(o, "prefix") + str(o, "middle") + str(o, "suffix"), kCandidate);
  EXPECT_EQ(str(o, "middle").rfind("source = \"\"\"", 0), 0u);
}

TEST(DiceDataSplitInfillCliTest, DevItemsToAFileAsPublished) {
  TempDir dir;
  const Ran r =
      run(split_infill("--items " + quoted(kDev) + " --out " + quoted(dir.sub("o.json"))));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(
      r.output.find("wrote " + dir.sub("o.json") + ": 60 items split (60 came with a split, 0"),
      std::string::npos)
      << r.output;
  EXPECT_EQ(parsed(read_text(dir.sub("o.json"))), parsed(read_text(kDev)));
  EXPECT_FALSE(std::filesystem::exists(dir.sub("o.json.tmp")));
}

TEST(DiceDataSplitInfillCliTest, ReplacedSplitsAreNotedOnStandardError) {
  TempDir dir;
  std::ofstream(dir.sub("i.jsonl"), std::ios::binary)
      << json::serialize(json::object{{"id", "x"},
                                      {"cuda_code", kCandidate},
                                      {"prefix", ""},
                                      {"middle", ""},
                                      {"suffix", ""}})
      << "\n";
  const Ran r =
      run(split_infill("--items " + quoted(dir.sub("i.jsonl")) + " 2>" + quoted(dir.sub("err"))),
          false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(read_text(dir.sub("err"))
                .find("1 items came with a split other than this one, "
                      "replaced: item 0 (id x)"),
            std::string::npos)
      << read_text(dir.sub("err"));
  const json::object o = parsed(r.output).as_object();  // one JSON line
  EXPECT_EQ(str(o, "prefix") + str(o, "middle") + str(o, "suffix"), kCandidate);
}

TEST(DiceDataSplitInfillCliTest, FilesThatCannotBeReadSplitOrWrittenExitOne) {
  TempDir dir;
  std::ofstream(dir.sub("k.py"), std::ios::binary) << kCandidate;
  std::ofstream(dir.sub("bad.py"), std::ios::binary)
      << std::string(kCandidate).substr(0, std::string(kCandidate).find("\"\"\"\n\ncpp"));
  std::ofstream(dir.sub("file")) << "x";
  const std::pair<std::string, std::string> cases[] = {
      {"--candidate " + quoted(dir.sub("none.py")), dir.sub("none.py") + ": no such file"},
      {"--items " + quoted(dir.path()), dir.path() + ": is a directory"},
      {"--candidate " + quoted(dir.sub("bad.py")) + " --out " + quoted(dir.sub("o.json")),
       dir.sub("bad.py") + ":6: unterminated string"},
      {"--items " + quoted(dir.sub("k.py")) + " --out " + quoted(dir.sub("o.json")),
       dir.sub("k.py") + ":1:1: not JSON"},
      {"--candidate " + quoted(dir.sub("k.py")) + " --out " + quoted(dir.sub("file/o.json")),
       dir.sub("file/o.json")},
  };
  for (const auto& [args, names] : cases) {
    const Ran r = run(split_infill(args));
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.output;
    EXPECT_NE(r.output.find("dice-data: " + names), std::string::npos) << args << ": " << r.output;
    EXPECT_FALSE(std::filesystem::exists(dir.sub("o.json"))) << args;
  }
}

TEST(DiceDataSplitInfillCliTest, BadArgumentsExitTwoNamingTheArgument) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "--candidate or --items"},
      {"--candidate a.py --items b.json", "--candidate and --items"},
      {"--candidate", "--candidate: missing its value"},
      {"--items=", "--items: expected a file"},
      {"--candidate a.py --format json", "'--format'"},
  };
  for (const auto& [args, names] : cases) {
    const Ran r = run(split_infill(args));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.output.find(names), std::string::npos) << args << ": " << r.output;
    EXPECT_NE(r.output.find("--help"), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace dice::data
