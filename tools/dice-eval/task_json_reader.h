// Problems from task files (the format of the DICE release, read by the rules of
// tasks/task_file.h, as the learner reads them):
//   end-to-end: data/dice-rl/end_to_end_kernel_generation_4000.json, heldout_e2e.json
//   infill:     data/dice-rl/kernel_infilling_dev.json, heldout_infill.json
// A file is infill when its first item has "prefix" or "suffix" (or when the caller says so),
// and then every item must be; a file's items without a level take the caller's level.
// shape_variants are kept; reference answers (cuda_code, middle, raw_answer) are not read.
//
// And the held-out split of a generated curriculum (dice-data curriculum --out DIR): DIR's
// heldout_infill.json (infill) and heldout_e2e.json (end-to-end).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/dice-eval/problem.h"

namespace dice::eval {

struct TaskJsonOptions {
  std::optional<TaskKind> kind;  // unset: infill when the first item has prefix or suffix
  std::string level;             // the level of items without one; "" = none
};

// The problems of one task file, in file order. InvalidArgument naming "<file>:[<index>]" for
// a bad item (tasks/task_file.h), the file for an empty array, or the file and "line:column"
// when it is not JSON; NotFound/IOError naming the file.
Result<std::vector<Problem>> read_task_json(const std::string& path,
                                            const TaskJsonOptions& options);

// The held-out files of a curriculum folder, as (path, kind): those of heldout_infill.json and
// heldout_e2e.json that exist, infill first.
std::vector<std::pair<std::string, TaskKind>> heldout_files(const std::string& dir);

}  // namespace dice::eval
