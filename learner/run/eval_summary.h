// An eval phase's table (tasks/eval_table.h: every rate the mean over a task's samples) as the
// learner's log line, one cell a level and one for all tasks:
//
//   level 1: exec 0.500 fast_1 0.250 fast_2 0.000 (8 tasks) | ... | all: ...
//
// With several samples a task each cell adds " pass@1 0.531 +-0.071 (8 samples a task)": pass@1
// is exec, and +- half its 95% interval over tasks (dice-cluster wait reads the line back:
// cluster/run_view.cc).
#pragma once

#include <string>

#include "tasks/eval_table.h"

namespace dice {

std::string eval_summary(const eval::EvalTally& tally);

}  // namespace dice
