// tools/dice-eval/progress.h: the status line's counts, rate and ETA.
#include "tools/dice-eval/progress.h"

#include <gtest/gtest.h>

namespace dice::eval {
namespace {

TEST(DiceEvalProgressTest, CountsRateAndEta) {
  Progress p;
  p.run_id = "eval-x-a2";
  p.total_problems = 75;
  p.done_before = 35;
  p.samples = 1;
  p.asked_answers = 40;
  p.judged_answers = 12;
  p.correct = 3;
  p.seconds = 300;  // 12 in 5 minutes: 2.4 a minute, 28 left: 11m40s
  p.reward_mode = "full";
  EXPECT_EQ(progress_line(p),
            "[######--------------] 12/40 answers (30%) | 47/75 problems done | 3 correct | "
            "2.4 answers/min | ETA 11m40s | run eval-x-a2");
  p.reward_mode = "extraction_only";
  p.rewarded = 9;
  p.judged_answers = 0;
  EXPECT_EQ(progress_line(p),
            "[--------------------] 0/40 answers (0%) | 35/75 problems done | 9 rewarded "
            "(extraction_only: not correctness) | 0.0 answers/min | ETA - | run eval-x-a2");
}

TEST(DiceEvalProgressTest, Durations) {
  EXPECT_EQ(format_duration(12.4), "12s");
  EXPECT_EQ(format_duration(245), "4m05s");
  EXPECT_EQ(format_duration(3720), "1h02m");
  EXPECT_EQ(format_duration(-1), "-");
}

}  // namespace
}  // namespace dice::eval
