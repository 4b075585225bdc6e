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

struct TableRow : TableCell {
  TaskKind kind = TaskKind::kEndToEnd;
  std::string level;  // "1", ...; "" for problems without a level; kAllLevels for the kind's total
};

struct EvalTable {
  std::vector<TableRow> rows;  // per kind in order of first appearance: levels ascending
                               // (no level last), then the kind's "all" row
};

// The table of `problems` from `verdicts` (task id -> its answers by sample index; a task not in
// the map, or a shorter list, has missing answers).
EvalTable tally_table(const std::vector<Problem>& problems,
                      const std::map<std::string, std::vector<AnswerVerdict>>& verdicts,
                      const TableOptions& options);

}  // namespace dice::eval
