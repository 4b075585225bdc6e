// The problem set of an evaluation, from one path (dice-eval --problems PATH), whatever its form:
//   - a file:   DICE-format task JSON (task_json_reader.h);
//   - a folder: the held-out split of a generated curriculum (heldout_infill.json and/or
//               heldout_e2e.json in it), else a KernelBench checkout (level<N>/ folders in it or
//               in its KernelBench/), else one folder of KernelBench problem files
//               (kernelbench_reader.h; its level from its name level<N>, else options.level).
// Then filtered (levels, per_level) and checked: ids unique over the whole set.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/dice-eval/problem.h"

namespace dice::eval {

struct ProblemSetOptions {
  std::string level;                // --level: for sources that name none ("" = none)
  std::optional<TaskKind> kind;     // --kind: a task JSON file's kind (unset: detected)
  std::vector<std::string> levels;  // --levels: keep only these levels (empty: all)
  int per_level = 0;  // --per-level: at most the first N of each (kind, level); 0: all
};

struct ProblemSet {
  std::string path;  // as given
  std::string form;  // "kernelbench" (level folders), "kernelbench-folder", "task-json", "heldout"
  std::vector<Problem> problems;  // in the source's order (levels ascending for KernelBench)
};

// NotFound "problem set PATH: no such file or folder"; InvalidArgument for a folder in none of
// the forms above, a bad file in it (named by the readers), an id used twice in the set (naming
// both places), a bad --level, or nothing left after the filters.
Result<ProblemSet> read_problem_set(const std::string& path, const ProblemSetOptions& options);

}  // namespace dice::eval
