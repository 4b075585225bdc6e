// tools/dice-eval/cli.h: flags, their defaults and every refusal.
#include "tools/dice-eval/cli.h"

#include <gtest/gtest.h>

namespace dice::eval {
namespace {

std::vector<std::string> base(std::vector<std::string> more = {}) {
  std::vector<std::string> args = {"--model", "m", "--problems", "p", "--out", "o"};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

std::string error(std::vector<std::string> args) {
  auto parsed = parse_command_line(args);
  EXPECT_FALSE(parsed.ok());
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(DiceEvalCliArgsTest, DefaultsAreDicesEvaluation) {
  auto req = parse_command_line(base());
  ASSERT_TRUE(req.ok()) << req.status().to_string();
  EXPECT_EQ(req->samples, 1);
  EXPECT_EQ(req->decoding, "greedy");
  EXPECT_EQ(req->max_new_tokens, 4096);
  EXPECT_EQ(req->pass_k, std::vector<int>{1});
  EXPECT_DOUBLE_EQ(req->noise_z, kDefaultNoiseZ);
  EXPECT_TRUE(req->timing);
  EXPECT_EQ(req->reward_mode, "");
  EXPECT_TRUE(req->overrides.empty());
}

TEST(DiceEvalCliArgsTest, ReadsEveryFlagAndOverride) {
  auto req = parse_command_line(base({"--samples=8",
                                      "--decoding",
                                      "sample",
                                      "--pass-k",
                                      "1,4",
                                      "--levels",
                                      "1,2",
                                      "--level=3",
                                      "--per-level",
                                      "10",
                                      "--kind",
                                      "infill",
                                      "--max-new-tokens",
                                      "512",
                                      "--reward-mode",
                                      "compile_only",
                                      "--noise-z",
                                      "0",
                                      "--no-timing",
                                      "--config",
                                      "c.yaml",
                                      "--id",
                                      "run_7.b",
                                      "--reward-log",
                                      "l",
                                      "--chunk-size",
                                      "16",
                                      "--retries",
                                      "0",
                                      "--status-interval",
                                      "5",
                                      "--timeout",
                                      "60",
                                      "--cluster",
                                      "x",
                                      "rollout.max_batch=16",
                                      "reward.timeout_seconds=9"}));
  ASSERT_TRUE(req.ok()) << req.status().to_string();
  EXPECT_EQ(req->samples, 8);
  EXPECT_EQ(req->pass_k, (std::vector<int>{1, 4}));
  EXPECT_EQ(req->problem_options.levels, (std::vector<std::string>{"1", "2"}));
  EXPECT_EQ(req->problem_options.level, "3");
  EXPECT_EQ(req->problem_options.per_level, 10);
  EXPECT_EQ(req->problem_options.kind, TaskKind::kInfill);
  EXPECT_EQ(req->max_new_tokens, 512);
  EXPECT_EQ(req->reward_mode, "compile_only");
  EXPECT_EQ(req->noise_z, 0.0);
  EXPECT_FALSE(req->timing);
  EXPECT_EQ(req->id, "run_7.b");
  EXPECT_EQ(req->chunk_size, 16);
  EXPECT_EQ(req->retries, 0);
  EXPECT_EQ(req->timeout, 60.0);
  EXPECT_EQ(req->overrides,
            (std::vector<std::string>{"rollout.max_batch=16", "reward.timeout_seconds=9"}));
  auto sampled = parse_command_line(base({"--samples", "5", "--decoding", "sample"}));
  ASSERT_TRUE(sampled.ok());
  EXPECT_EQ(sampled->pass_k, (std::vector<int>{1, 5}));  // default: 1 and N
  EXPECT_TRUE(parse_command_line({"--out", "x", "-h"})->help);
}

TEST(DiceEvalCliArgsTest, RefusesWhatCannotBeMeant) {
  EXPECT_EQ(error({"--problems", "p", "--out", "o"}), "--model: required");
  EXPECT_EQ(error(base({"--frobnicate"})), "unknown option '--frobnicate'");
  EXPECT_EQ(error(base({"--samples"})), "--samples: missing its value");
  EXPECT_EQ(error(base({"--samples", "0"})),
            "--samples: expected an integer in [1, 100000], got '0'");
  EXPECT_EQ(error(base({"--samples", "4"})),
            "--samples 4 with greedy decoding (the default) gives identical answers: add "
            "--decoding sample (rollout.sampling)");
  EXPECT_EQ(error(base({"--samples", "2", "--decoding", "sample", "--pass-k", "3"})),
            "--pass-k: k = 3 needs at least 3 samples per problem (--samples 2)");
  EXPECT_EQ(error(base({"--decoding", "beam"})),
            "--decoding: expected greedy or sample, got 'beam'");
  EXPECT_EQ(error(base({"--reward-mode", "fast"})),
            "--reward-mode: expected full, compile_only or extraction_only, got 'fast'");
  EXPECT_EQ(error(base({"--noise-z", "-1"})), "--noise-z: expected a number in [0, 10], got '-1'");
  EXPECT_EQ(error(base({"--id", "a b"})).substr(0, 20), "--id: expected 1-64 ");
  EXPECT_EQ(error(base({"stray"})), "unexpected argument 'stray' (config overrides are KEY=VALUE)");
  EXPECT_EQ(error(base({"rollout.model_path=/m"})),
            "override 'rollout.model_path=/m': dice-eval sets rollout.model_path itself (use "
            "--model)");
  EXPECT_EQ(error(base({"learner.update_policy=true"})),
            "override 'learner.update_policy=true': dice-eval sets learner.update_policy itself "
            "(an evaluation never updates the policy)");
}

}  // namespace
}  // namespace dice::eval
