// dice-eval's table: the evaluation table of tasks/eval_table.h (the one the learner's in-run
// evaluation reports; every rate the mean over a problem's --samples answers) with one row per
// (kind, level) of the problem set and an "all" row per kind.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tasks/eval_table.h"
#include "tools/dice-eval/problem.h"

namespace dice::eval {

inline constexpr char kAllLevels[] = "all";

// A row's numbers (TableCell) are DICE's and KernelBench's evaluation semantics: the answers as
// judged with vendor libraries allowed beside the answer's own kernels (reward.libraries:
// allowed) at atol = rtol = 0.01. own_kernels_only is the same row with every answer that called
// a vendor library counted as not correct: what the RL reward (reward.libraries:
// own_kernels_only, its default) would have credited.
struct TableRow : TableCell {
  TaskKind kind = TaskKind::kEndToEnd;
  std::string level;  // "1", ...; "" for problems without a level; kAllLevels for the kind's total
  TableCell own_kernels_only;
};

struct EvalTable {
  std::vector<TableRow> rows;  // per kind in order of first appearance: levels ascending
                               // (no level last), then the kind's "all" row
};

// Answers by task id, each task's by sample index; a task not in the map, or a shorter list, has
// missing answers.
using TaskAnswers = std::map<std::string, std::vector<AnswerVerdict>>;

// The table of `problems` from `verdicts`, each row's own_kernels_only cell from
// `own_kernels_only` (the same answers, those that called a vendor library not correct:
// log_verdicts.h).
EvalTable tally_table(const std::vector<Problem>& problems, const TaskAnswers& verdicts,
                      const TaskAnswers& own_kernels_only, const TableOptions& options);
// The same with no answer that called a library: both sets of cells alike.
EvalTable tally_table(const std::vector<Problem>& problems, const TaskAnswers& verdicts,
                      const TableOptions& options);

}  // namespace dice::eval
