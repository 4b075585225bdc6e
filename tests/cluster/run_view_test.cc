#include "cluster/run_view.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cluster/live_line_writer.h"

namespace dice::cluster {
namespace {

constexpr char kSftStep[] =
    "ts=2026-12-06T18:45:02.123Z level=info run=r7 component=learner at=sft_run.cc:124 "
    "msg=\"SFT step 3/16\" epoch=1 loss=3.21 lr=0.003 grad_norm=1.2 tokens_per_s=5120 eta_s=65";

TEST(RunViewTest, SftStepsRedrawOneLiveLine) {
  RunView view;
  ViewUpdate update = view.read(kSftStep);
  EXPECT_TRUE(update.lines.empty());
  ASSERT_TRUE(update.live.has_value());
  EXPECT_EQ(*update.live, "SFT  step 3/16 (18%)  epoch 1  loss 3.21  5120 tok/s  ETA 1m05s");
  update = view.finish();
  ASSERT_EQ(update.lines.size(), 1u);
  EXPECT_EQ(update.lines[0], "SFT  step 3/16 (18%)  epoch 1  loss 3.21  5120 tok/s  ETA 1m05s");
}

// Every line of a toy run's learner log (tests/cluster/wait_view_system_test.cc's run: 16 SFT
// steps, an evaluation, two RL steps), read in order.
struct Transcript {
  std::vector<std::string> lines;  // permanent lines, in order
  std::vector<std::string> lives;  // each new text of the live line ("" when it went)
};

Transcript read_fixture(const std::string& name) {
  std::ifstream in(std::string(DICE_RUN_VIEW_FIXTURES) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  RunView view;
  Transcript transcript;
  auto take = [&](const ViewUpdate& update) {
    transcript.lines.insert(transcript.lines.end(), update.lines.begin(), update.lines.end());
    if (update.live) transcript.lives.push_back(*update.live);
  };
  for (std::string line; std::getline(in, line);) take(view.read(line));
  take(view.finish());
  return transcript;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const auto& line : lines) text += line + "\n";
  return text;
}

TEST(RunViewTest, AToyRunReadsAsPhasesTablesAndTheEnd) {
  const Transcript t = read_fixture("toy_learner.log");
  const std::vector<std::string> expected = {
      "19:36:06 WARN no CUDA device visible: the policy update runs on the CPU (only tiny models "
      "finish a step there) model=/tmp/toy-run/model",
      "run capture-1: 3 phases, 3 steps; policy update: TraceRL; reward extraction_only",
      "SFT  step 16/16 (100%)  epoch 4  loss 2.94188  1336 tok/s  ETA 0s  done in 21s",
      "eval-sft  step 1/1  reward 0.000  correct 0.000  9.62 candidates/s  run ETA 0s",
      "evaluation of eval-sft (policy v1, reward extraction_only)",
      "  level   exec  fast_1  fast_2  tasks",
      "  1      0.000   0.000   0.000      2",
      "  all    0.000   0.000   0.000      2",
      "phase rl",
      "   step    k/N  reward  correct  cands  mixed      loss        kl   secs",
      "      1    1/2   0.000    0.000      8    0/2         -         -    0.5",
      "      2    2/2   0.000    0.000      8    0/2         -         -    0.7",
      "learner done: 3 steps",
  };
  EXPECT_EQ(joined(t.lines), joined(expected));
}

TEST(RunViewTest, EachSftStepOfAToyRunRedrawsTheLiveLine) {
  const Transcript t = read_fixture("toy_learner.log");
  int sft_lives = 0;
  for (const auto& live : t.lives) sft_lives += live.rfind("SFT  step ", 0) == 0;
  // The "SFT" line (step 0/16), then each of the 16 steps.
  EXPECT_EQ(sft_lives, 17) << joined(t.lives);
  EXPECT_EQ(t.lives.back(), "") << "the live line is gone at the end";
}

TEST(RunViewTest, ARestartIsShownWithoutItsCommandAndTheFirstStartIsNot) {
  RunView view;
  EXPECT_TRUE(view.read("=== dice-cluster: 2026-12-06T19:36:04Z starting learner-0 (restarts so "
                        "far: 0): /repo/build/learner/dice-learner --config x.yaml")
                  .lines.empty());
  view.read(kSftStep);
  const ViewUpdate update = view.read(
      "=== dice-cluster: 2026-12-06T19:40:00Z starting learner-0 (restarts so far: "
      "1): /repo/build/learner/dice-learner --config x.yaml");
  ASSERT_EQ(update.lines.size(), 2u);
  EXPECT_EQ(update.lines[0].rfind("SFT  step 3/16", 0), 0u) << "where the phase was";
  EXPECT_EQ(update.lines[1],
            "=== dice-cluster: 2026-12-06T19:40:00Z starting learner-0 (restarts so far: 1)");
}

// A pool evaluation (several samples a task) gets a pass@1 column; a summary of another shape is
// shown as it is.
TEST(RunViewTest, EvaluationTablesShowPassAtOneAndFallBackToTheMessage) {
  RunView view;
  ViewUpdate update = view.read(
      "ts=2026-12-06T19:36:27.227Z level=info run=r component=learner-0 at=run_loop.cc:448 "
      "msg=\"evaluation of phase pool: level 1: exec 0.500 fast_1 0.250 fast_2 0.000 (2 tasks) "
      "pass@1 0.375 +-0.300 (4 samples a task) | all: exec 0.500 fast_1 0.250 fast_2 0.000 (2 "
      "tasks) pass@1 0.375 +-0.300 (4 samples a task)\" policy_version=3 "
      "reward_mode=compile_only");
  EXPECT_EQ(joined(update.lines),
            "evaluation of pool (policy v3, reward compile_only)\n"
            "  level   exec  fast_1  fast_2  tasks  pass@1\n"
            "  1      0.500   0.250   0.000      2  0.375 +-0.300\n"
            "  all    0.500   0.250   0.000      2  0.375 +-0.300\n");
  update = view.read(
      "ts=2026-12-06T19:36:27.227Z level=info run=r component=learner-0 at=run_loop.cc:448 "
      "msg=\"evaluation of phase pool: 7 of 9 right\"");
  EXPECT_EQ(joined(update.lines), "evaluation of phase pool: 7 of 9 right\n");
}

TEST(RunViewTest, LinesThatAreNotLogfmtAreShownAsTheyAre) {
  RunView view;
  const ViewUpdate update = view.read("terminate called without an active exception\n");
  ASSERT_EQ(update.lines.size(), 1u);
  EXPECT_EQ(update.lines[0], "terminate called without an active exception");
  EXPECT_FALSE(update.live.has_value());
}

TEST(LiveLineWriterTest, RedrawsTheLiveLineInPlaceCutToTheWidth) {
  std::ostringstream out;
  LiveLineWriter writer(out, [] { return 12; });
  writer.write({{}, std::string("0123456789abcdef")});
  writer.write({{"kept"}, std::string("second")});
  writer.write({{}, std::nullopt});  // nothing changes, nothing written
  writer.write({{}, std::string("")});
  EXPECT_EQ(out.str(), "0123456789a\r\x1b[Kkept\nsecond\r\x1b[K");
}

}  // namespace
}  // namespace dice::cluster
