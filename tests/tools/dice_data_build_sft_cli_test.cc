// dice-data build-sft as a process: its exit status (0 written, 1 bad input or a failure, 2 bad
// arguments, 3 no GPU) and messages, what it writes where this machine cannot measure (a nvcc
// that does not exist stands for a machine without a GPU toolchain, on any machine), and a rerun
// over verdicts an earlier run recorded, which needs no GPU.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"
#include "tests/tools/dice_data_pair_judge_test_double.h"
#include "tests/tools/dice_data_test_util.h"
#include "tools/dice-data/build_sft.h"
#include "tools/dice-data/sft_pairs.h"

namespace dice::data {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using testing::quoted;
using testing::Ran;
using testing::read_text;
using testing::run;

// No nvcc there: the reward toolchain's probe fails as on a machine without CUDA.
const std::string kNoNvcc = " --nvcc /nonexistent/nvcc";

std::string build_sft(const std::string& args) {
  return quoted(DICE_DATA_EXE) + " build-sft " + args;
}

class DiceDataBuildSftCliTest : public ::testing::Test {
 protected:
  DiceDataBuildSftCliTest() : dir_("dice-data-build-sft-cli-test") {
    // A candidate of the published shape, and one the static checks reject (no ModelNew).
    json::array pairs;
    pairs.push_back({{"id", "good"},
                     {"level", "1"},
                     {"pytorch_code", "import torch\n"},
                     {"cuda_code", testing::kCandidate}});
    pairs.push_back({{"id", "bad"},
                     {"level", 2},
                     {"pytorch_code", "import torch\n"},
                     {"cuda_code", "import torch\nx = 1\n"}});
    std::ofstream(input(), std::ios::binary) << json::serialize(pairs);
  }
  std::string input() const { return dir_.sub("pairs.json"); }
  std::string out(const std::string& name = "") const {
    return dir_.sub("out") + (name.empty() ? "" : "/" + name);
  }
  std::string args() const { return "--input " + quoted(input()) + " --out " + quoted(out()); }

  testing_util::TempDir dir_;
};

TEST_F(DiceDataBuildSftCliTest, HelpDescribesTheCommand) {
  const Ran r = run(build_sft("--help"), false);
  EXPECT_EQ(r.exit_code, 0);
  for (const std::string& want :
       {std::string("dice-data build-sft --input FILE --out DIR"), std::string("--min-speedup X"),
        std::string("--noise-z Z"), std::string("noise-checked lower"),
        std::string("Without a GPU"), std::to_string(kBuildSftNoGpu) + " no GPU (nothing kept)"})
    EXPECT_NE(r.output.find(want), std::string::npos) << want;
}

TEST_F(DiceDataBuildSftCliTest, BadArgumentsExit2NamingTheArgument) {
  for (const auto& [arguments, message] : std::vector<std::pair<std::string, std::string>>{
           {"--out " + quoted(out()), "--input: required"},
           {"--input " + quoted(input()), "--out: required"},
           {args() + " --min-speedup 0", "--min-speedup: expected a number > 0"},
           {args() + " --noise-z=0", "--noise-z: expected a number > 0"},
           {args() + " --noise-z x", "--noise-z: expected a number > 0"},
           {args() + " --form chat", "--form: expected end_to_end, infill or both, got 'chat'"},
           {args() + " --timing-trials 1", "--timing-trials: expected an integer in [2, 100000]"},
           {args() + " --gpu-slots", "--gpu-slots: missing its value"},
           {args() + " --bogus 1", "unknown argument '--bogus'"},
       }) {
    const Ran r = run(build_sft(arguments));
    EXPECT_EQ(r.exit_code, 2) << arguments << "\n" << r.output;
    EXPECT_NE(r.output.find("dice-data: " + message), std::string::npos) << arguments << "\n"
                                                                         << r.output;
  }
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(DiceDataBuildSftCliTest, BadInputExits1NamingFileItemAndField) {
  std::ofstream(dir_.sub("broken.json"), std::ios::binary) << "[{\"id\": 1,\n  ]";
  std::ofstream(dir_.sub("fields.jsonl"), std::ios::binary)
      << "{\"id\": \"a\", \"pytorch_code\": \"r\", \"cuda_code\": \"c\"}\n"
      << "{\"id\": \"b\", \"cuda_code\": \"c\"}\n";
  for (const auto& [file, message] : std::vector<std::pair<std::string, std::string>>{
           {dir_.sub("none.json"), dir_.sub("none.json") + ": no such file"},
           {dir_.sub("broken.json"), dir_.sub("broken.json") + ":2:3: not JSON"},
           {dir_.sub("fields.jsonl"),
            dir_.sub("fields.jsonl") + ":2: item 1 (id b): \"pytorch_code\" is missing"},
       }) {
    const Ran r = run(build_sft("--input " + quoted(file) + " --out " + quoted(out())));
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_EQ(r.output.rfind("dice-data build-sft: ", 0), 0u) << r.output;
    EXPECT_NE(r.output.find(message), std::string::npos) << message << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(out()));
}

TEST_F(DiceDataBuildSftCliTest, WithoutAGpuItSaysSoAndKeepsNothing) {
  const Ran r = run(build_sft(args() + kNoNvcc));
  EXPECT_EQ(r.exit_code, kBuildSftNoGpu) << r.output;
  for (const char* want : {"no GPU here (nvcc not found", "no pair can be kept",
                           "nothing kept, no sft.json written; screened 2 pairs, 1 of them fail "
                           "before the GPU"})
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;
  EXPECT_FALSE(fs::exists(out("sft.json")));
  EXPECT_FALSE(fs::exists(out("verdicts.jsonl")));
  EXPECT_FALSE(fs::exists(out("report.json")));
  const json::value report = json::parse(read_text(out("report-no-gpu.json")));
  EXPECT_FALSE(report.at("measured").as_bool());
  EXPECT_EQ(report.at("kept").as_int64(), 0);
  EXPECT_EQ(report.at("levels").at("1").at("unmeasured").as_int64(), 1);
  EXPECT_EQ(report.at("levels").at("2").at("staticCheck").as_int64(), 1);
  EXPECT_NE(read_text(out("report-no-gpu.md")).find("**No GPU here: nothing is kept.**"),
            std::string::npos);
}

TEST_F(DiceDataBuildSftCliTest, RecordedVerdictsNeedNoGpu) {
  // Verdicts as a run on a GPU node records them: the good pair 3x faster, tight; the bad one
  // rejected by the static checks.
  auto pairs = parse_sft_pairs(read_text(input()), input());
  ASSERT_TRUE(pairs.ok()) << pairs.status().to_string();
  auto stamped = [&](std::size_t i, const testing::VerdictSpec& spec) {
    std::string line = testing::verdict_line((*pairs)[i].id, spec);
    line.pop_back();  // the closing brace
    return line + ", \"pair_hash\": \"" + (*pairs)[i].hash + "\"}\n";
  };
  const std::string good = stamped(0, testing::timed(0.5, 0.005, 1.5, 0.01));
  const std::string bad =
      stamped(1, testing::failed(schema::FailureClass::STATIC_CHECK, /*compiled=*/false));
  fs::create_directories(out());
  std::ofstream(out("verdicts.jsonl"), std::ios::binary) << good << bad;

  Ran r = run(build_sft(args() + kNoNvcc));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("2 judged before, 0 to judge"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("kept 1 of 2 pairs"), std::string::npos) << r.output;
  auto items = testing::json_items(read_text(out("sft.json")), "sft.json");
  ASSERT_EQ(items.size(), 1u);
  EXPECT_EQ(testing::str(items[0], "id"), "good");
  EXPECT_EQ(testing::str(items[0], "cuda_code"), testing::kCandidate);
  EXPECT_TRUE(fs::exists(out("report.md")));

  r = run(build_sft(args() + kNoNvcc + " --min-speedup=3.5"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(read_text(out("sft.json")), "[]\n");

  // A kill cut the second line: that pair must be judged, and this machine cannot.
  const std::string cut = good + bad.substr(0, bad.size() / 2);
  std::ofstream(out("verdicts.jsonl"), std::ios::binary | std::ios::trunc) << cut;
  r = run(build_sft(args() + kNoNvcc));
  EXPECT_EQ(r.exit_code, kBuildSftNoGpu) << r.output;
  EXPECT_NE(r.output.find("1 judged before, 1 to judge"), std::string::npos) << r.output;
  EXPECT_EQ(read_text(out("verdicts.jsonl")), cut);
}

}  // namespace
}  // namespace dice::data
