// dice-data's argument parsing (tools/dice-data/cli.h): what each flag of each command sets, and
// errors that name the argument at fault.
#include "tools/dice-data/cli.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace dice::data {
namespace {

TEST(DiceDataCliArgsTest, DefaultsAndEveryFlag) {
  auto r = parse_command_line({"curriculum", "--out", "d"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->command, Command::kCurriculum);
  EXPECT_EQ(r->out_dir, "d");
  EXPECT_EQ(r->options.seed, 1u);
  EXPECT_EQ(r->options.sft_pairs, 3000);
  EXPECT_EQ(r->options.rl_tasks_per_level, 64);
  EXPECT_EQ(r->options.heldout_per_level, 32);
  EXPECT_FALSE(r->options.heldout_indist_per_level.has_value());

  r = parse_command_line({"curriculum", "--seed", "18446744073709551615", "--sft-pairs=10",
                          "--rl-tasks-per-level", "0", "--heldout-per-level=5", "--out=x/y"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->options.seed, 18446744073709551615ull);
  EXPECT_EQ(r->options.sft_pairs, 10);
  EXPECT_EQ(r->options.rl_tasks_per_level, 0);
  EXPECT_EQ(r->options.heldout_per_level, 5);
  EXPECT_FALSE(r->options.heldout_indist_per_level.has_value());
  EXPECT_EQ(r->out_dir, "x/y");
  EXPECT_EQ(r->options.names, Variety::kVaried);
  EXPECT_EQ(r->options.layout, Variety::kVaried);
  EXPECT_EQ(r->options.rl_keys, RlKeys::kSeen);
  r = parse_command_line({"curriculum", "--out", "d", "--names=fixed", "--layout", "fixed",
                          "--rl-keys", "novel", "--heldout-indist-per-level", "3"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->options.heldout_indist_per_level, 3);
  EXPECT_EQ(r->options.names, Variety::kFixed);
  EXPECT_EQ(r->options.layout, Variety::kFixed);
  EXPECT_EQ(r->options.rl_keys, RlKeys::kNovel);
}

TEST(DiceDataCliArgsTest, SplitInfillFlags) {
  auto r = parse_command_line({"split-infill", "--candidate", "k.py"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->command, Command::kSplitInfill);
  EXPECT_EQ(r->split.candidate, "k.py");
  EXPECT_EQ(r->split.items, "");
  EXPECT_EQ(r->split.out, "");
  r = parse_command_line({"split-infill", "--items=dev.json", "--out", "o.json"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->command, Command::kSplitInfill);
  EXPECT_EQ(r->split.candidate, "");
  EXPECT_EQ(r->split.items, "dev.json");
  EXPECT_EQ(r->split.out, "o.json");
}

TEST(DiceDataCliArgsTest, BuildSftDefaultsAndEveryFlag) {
  auto r = parse_command_line({"build-sft", "--input", "p.json", "--out", "d"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->command, Command::kBuildSft);
  const BuildSftOptions& o = r->build_sft;
  EXPECT_EQ(o.input, "p.json");
  EXPECT_EQ(o.out_dir, "d");
  EXPECT_EQ(o.rule.min_speedup, 2.0);
  EXPECT_EQ(o.rule.noise_z, eval::kDefaultNoiseZ);  // dice-eval's
  EXPECT_EQ(o.form, SftForm::kEndToEnd);
  EXPECT_EQ(o.judge.python, "python3");
  EXPECT_EQ(o.judge.nvcc, "/usr/local/cuda/bin/nvcc");
  EXPECT_EQ(o.judge.compile_cache, "runs/compile_cache");
  EXPECT_EQ(o.judge.compile_jobs, 0);
  EXPECT_EQ(o.judge.gpu_slots, 4);
  EXPECT_EQ(o.judge.correctness_trials, 5);
  EXPECT_EQ(o.judge.timing_trials, 100);
  EXPECT_EQ(o.judge.timeout_seconds, 300);

  r = parse_command_line({"build-sft",
                          "--input=p.jsonl",
                          "--out=o",
                          "--min-speedup",
                          "1.5",
                          "--noise-z=2.33",
                          "--form",
                          "both",
                          "--python",
                          "/venv/bin/python",
                          "--nvcc=/cuda/bin/nvcc",
                          "--compile-cache",
                          "cc",
                          "--compile-jobs",
                          "8",
                          "--gpu-slots=2",
                          "--trials",
                          "3",
                          "--timing-trials",
                          "50",
                          "--timeout-seconds=60"});
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const BuildSftOptions& f = r->build_sft;
  EXPECT_EQ(f.input, "p.jsonl");
  EXPECT_EQ(f.out_dir, "o");
  EXPECT_EQ(f.rule.min_speedup, 1.5);
  EXPECT_EQ(f.rule.noise_z, 2.33);
  EXPECT_EQ(f.form, SftForm::kBoth);
  EXPECT_EQ(f.judge.python, "/venv/bin/python");
  EXPECT_EQ(f.judge.nvcc, "/cuda/bin/nvcc");
  EXPECT_EQ(f.judge.compile_cache, "cc");
  EXPECT_EQ(f.judge.compile_jobs, 8);
  EXPECT_EQ(f.judge.gpu_slots, 2);
  EXPECT_EQ(f.judge.correctness_trials, 3);
  EXPECT_EQ(f.judge.timing_trials, 50);
  EXPECT_EQ(f.judge.timeout_seconds, 60);
  r = parse_command_line({"build-sft", "--input", "p", "--out", "o", "--form=infill"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->build_sft.form, SftForm::kInfill);
}

TEST(DiceDataCliArgsTest, HelpWinsAnywhere) {
  for (const auto& args : std::vector<std::vector<std::string>>{{"--help"},
                                                                {"-h"},
                                                                {"curriculum", "--help"},
                                                                {"curriculum", "--seed", "x", "-h"},
                                                                {"split-infill", "--help"},
                                                                {"build-sft", "-h"}}) {
    auto r = parse_command_line(args);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->help);
  }
  const std::string usage = usage_text();
  for (const char* flag : {"--out",
                           "--seed",
                           "--sft-pairs",
                           "--rl-tasks-per-level",
                           "--heldout-per-level",
                           "--heldout-indist-per-level",
                           "--names",
                           "--layout",
                           "--rl-keys",
                           "sft.json",
                           "rl_infill.json",
                           "rl_e2e.json",
                           "heldout_infill.json",
                           "heldout_e2e.json",
                           "heldout_indist_infill.json",
                           "heldout_indist_e2e.json",
                           "op_key",
                           "verify_items.json",
                           "MANIFEST.json",
                           "split-infill",
                           "--candidate",
                           "--items",
                           "JSON Lines",
                           "build-sft",
                           "--input",
                           "--min-speedup",
                           "--noise-z",
                           "--form",
                           "--timing-trials",
                           "verdicts.jsonl",
                           "report.md",
                           "report-no-gpu.json",
                           "Exit status"})
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
}

TEST(DiceDataCliArgsTest, ErrorsNameTheArgument) {
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{}, "missing the command"},
      {{"generate"}, "'generate'"},
      {{"curriculum"}, "--out"},
      {{"curriculum", "--out", "d", "--bogus", "1"}, "--bogus"},
      {{"curriculum", "--out", "d", "--seed"}, "--seed: missing its value"},
      {{"curriculum", "--out", "d", "--seed", "abc"}, "--seed: expected an integer"},
      {{"curriculum", "--out", "d", "--seed", "18446744073709551616"}, "--seed"},
      {{"curriculum", "--out", "d", "--sft-pairs", "-1"}, "--sft-pairs: expected an integer"},
      {{"curriculum", "--out", "d", "--rl-tasks-per-level=2000000"}, "--rl-tasks-per-level"},
      {{"curriculum", "--out", "d", "--heldout-per-level="}, "--heldout-per-level"},
      {{"curriculum", "--out="}, "--out"},
      {{"curriculum", "--out", "d", "--names", "random"}, "--names: expected varied or fixed"},
      {{"curriculum", "--out", "d", "--rl-keys=held"}, "--rl-keys: expected novel or seen"},
      {{"curriculum", "d"}, "'d'"},
      {{"split-infill"}, "--candidate or --items: required"},
      {{"split-infill", "--out", "o.json"}, "--candidate or --items: required"},
      {{"split-infill", "--candidate", "k.py", "--items", "i.json"}, "--candidate and --items"},
      {{"split-infill", "--candidate="}, "--candidate: expected a file, got ''"},
      {{"split-infill", "--items", "i.json", "--out"}, "--out: missing its value"},
      {{"split-infill", "--items", "i.json", "--out="}, "--out: expected a file"},
      {{"split-infill", "--candidate", "k.py", "--seed", "1"}, "unknown argument '--seed'"},
      {{"split-infill", "k.py"}, "unknown argument 'k.py'"},
      {{"curriculum", "--out", "d", "--items", "i.json"}, "unknown argument '--items'"},
      {{"split"}, "unknown command 'split'"},
      {{"build-sft", "--out", "d"}, "--input: required"},
      {{"build-sft", "--input", "p"}, "--out: required"},
      {{"build-sft", "--input", "p", "--out="}, "--out: expected a path, got ''"},
      {{"build-sft", "--input", "p", "--out", "d", "--min-speedup", "-1"}, "--min-speedup"},
      {{"build-sft", "--input", "p", "--out", "d", "--min-speedup", "2x"}, "--min-speedup"},
      {{"build-sft", "--input", "p", "--out", "d", "--noise-z", "0"},
       "--noise-z: expected a number > 0"},
      {{"build-sft", "--input", "p", "--out", "d", "--noise-z", "nan"}, "--noise-z"},
      {{"build-sft", "--input", "p", "--out", "d", "--form", "chat"},
       "--form: expected end_to_end, infill or both"},
      {{"build-sft", "--input", "p", "--out", "d", "--gpu-slots", "0"},
       "--gpu-slots: expected an integer in [1, 64], got '0'"},
      {{"build-sft", "--input", "p", "--out", "d", "--timing-trials=1"},
       "--timing-trials: expected an integer in [2, 100000]"},
      {{"build-sft", "--input", "p", "--out", "d", "--trials", "x"}, "--trials"},
      {{"build-sft", "--input", "p", "--out", "d", "--seed", "1"}, "unknown argument '--seed'"},
      {{"build-sft", "p.json"}, "unknown argument 'p.json'"},
  };
  for (const auto& c : cases) {
    auto r = parse_command_line(c.args);
    ASSERT_FALSE(r.ok()) << c.names;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.names), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace dice::data
