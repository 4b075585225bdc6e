// The dice-data executable end to end: exit codes and messages for bad arguments, the files it
// writes (byte-identical for one seed), and the generated references run by PyTorch
// (dice_data_check_references.py; skipped where /usr/bin/python3 has no torch).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"
#include "tests/tools/dice_data_test_util.h"

namespace dice::data {
namespace {

using testing::quoted;
using testing::Ran;
using testing::read_text;
using testing::run;

const char kPython[] = "/usr/bin/python3";

std::string dice_data(const std::string& args) {
  return quoted(DICE_DATA_EXE) + " " + args;
}

// A fresh folder per test, named for this suite.
class TempDir : public testing_util::TempDir {
 public:
  TempDir() : testing_util::TempDir("dice-data-test") {}
};

const char* const kFiles[] = {"sft.json",
                              "rl_infill.json",
                              "rl_e2e.json",
                              "heldout_infill.json",
                              "heldout_e2e.json",
                              "heldout_indist_infill.json",
                              "heldout_indist_e2e.json",
                              "verify_items.json",
                              "MANIFEST.json"};

TEST(DiceDataCliTest, HelpDocumentsEveryFlagAndExitsZero) {
  const Ran r = run(dice_data("--help"));
  EXPECT_EQ(r.exit_code, 0);
  for (const char* flag : {"curriculum", "--out", "--seed", "--sft-pairs", "--rl-tasks-per-level",
                           "--heldout-per-level", "--help"})
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag;
}

TEST(DiceDataCliTest, BadArgumentsExitTwoNamingTheArgument) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "missing the command"},
      {"curriculum", "--out"},
      {"curriculum --out /tmp/x --seed banana", "--seed"},
      {"curriculum --out /tmp/x --sft-pairs -5", "--sft-pairs"},
      {"curriculum --out /tmp/x --frobnicate 1", "--frobnicate"},
      {"curriculum --out /tmp/x --heldout-per-level", "--heldout-per-level"},
  };
  for (const auto& [args, names] : cases) {
    const Ran r = run(dice_data(args));
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.output.find(names), std::string::npos) << args << ": " << r.output;
    EXPECT_NE(r.output.find("--help"), std::string::npos) << r.output;
  }
}

TEST(DiceDataCliTest, UnwritableOutputExitsOne) {
  TempDir dir;
  std::ofstream(dir.sub("file")) << "x";
  const Ran r = run(dice_data("curriculum --sft-pairs 3 --out " + quoted(dir.sub("file/sub"))));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("file/sub"), std::string::npos) << r.output;
}

TEST(DiceDataCliTest, WritesEveryFileAndTheSameBytesForTheSameSeed) {
  TempDir dir;
  const std::string args =
      "curriculum --seed 5 --sft-pairs 30 --rl-tasks-per-level 6 "
      "--heldout-per-level 4 --out ";
  Ran r = run(dice_data(args + quoted(dir.sub("a"))));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run(dice_data(args + quoted(dir.sub("b"))));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* f : kFiles) {
    const std::string a = read_text(dir.sub("a") + "/" + f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_EQ(a, read_text(dir.sub("b") + "/" + f)) << f;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.sub("a") + "/sft.json.tmp"));
  EXPECT_NE(read_text(dir.sub("a") + "/MANIFEST.json").find("\"seed\": 5"), std::string::npos);
}

bool python_has_torch() {
  return run(std::string(kPython) + " -c 'import torch'").exit_code == 0;
}

TEST(DiceDataCliTest, ReferencesRunUnderPyTorchForEveryShapeVariant) {
  if (!python_has_torch()) GTEST_SKIP() << kPython << " has no torch: the references are not run";
  TempDir dir;
  Ran r =
      run(dice_data("curriculum --seed 11 --sft-pairs 60 --rl-tasks-per-level 16 "
                    "--heldout-per-level 8 --out " +
                    quoted(dir.sub("c"))));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run(std::string(kPython) + " " + quoted(DICE_DATA_CHECK_SCRIPT) + " " + quoted(dir.sub("c")) +
          " --sample 40");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("checked 40 tasks"), std::string::npos) << r.output;
}

TEST(DiceDataCliTest, CandidatesPassTheRewardStaticChecks) {
  // The reward service's static anti-cheat checks (standard-library Python) over every
  // candidate: a correct pair must not be flagged (torch op in forward, no kernel launched...).
  if (!std::filesystem::exists(DICE_DATA_STATIC_CHECK))
    GTEST_SKIP() << DICE_DATA_STATIC_CHECK << " is not there";
  for (const char* names : {"varied", "fixed"}) {
    TempDir dir;
    Ran r = run(dice_data(std::string("curriculum --seed 3 --sft-pairs 60 --rl-tasks-per-level 10 "
                                      "--heldout-per-level 5 --names ") +
                          names + " --out " + quoted(dir.sub("s"))));
    ASSERT_EQ(r.exit_code, 0) << names << ": " << r.output;
    r = run(std::string(kPython) + " " + quoted(DICE_DATA_CHECK_SCRIPT) + " " +
            quoted(dir.sub("s")) + " --static-check " + quoted(DICE_DATA_STATIC_CHECK));
    EXPECT_EQ(r.exit_code, 0) << names << ": " << r.output;
    EXPECT_NE(r.output.find("static checks passed"), std::string::npos)
        << names << ": " << r.output;
  }
}

}  // namespace
}  // namespace dice::data
