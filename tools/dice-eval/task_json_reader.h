// Problems from DICE-format task JSON (REFERENCE.md section 7; learner/task_loader.h reads the
// same files): one JSON array of objects,
//   end-to-end: {"idx" | "id": 17 | "17", "level": "2" | 2, "pytorch_code": "...", ...}
//               (data/dice-rl/end_to_end_kernel_generation_4000.json, heldout_e2e.json)
//   infill:     {"id": ..., "pytorch_code": "...", "prefix": "...", "suffix": "...", ...}
//               (data/dice-rl/kernel_infilling_dev.json, heldout_infill.json)
// A file is infill when its first item has "prefix" or "suffix" (or when the caller says so),
// and then every item must be; "level" is optional (digits 0..255, or a non-negative integer),
// and a file's items without one take the caller's level. shape_variants are kept; reference
// answers (cuda_code, middle, raw_answer) are not read.
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
// a bad item (not an object, no id, an id used twice, no or empty pytorch_code, a bad level, an
// infill item without prefix and suffix, an end-to-end item in an infill file), or the file and
// "line:column" when it is not JSON; NotFound/IOError naming the file.
Result<std::vector<Problem>> read_task_json(const std::string& path,
                                            const TaskJsonOptions& options);

// The held-out files of a curriculum folder, as (path, kind): those of heldout_infill.json and
// heldout_e2e.json that exist, infill first.
std::vector<std::pair<std::string, TaskKind>> heldout_files(const std::string& dir);

}  // namespace dice::eval
