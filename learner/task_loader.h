// Tasks of the curriculum: JSON task files (the format of the DICE release, REFERENCE.md section 7)
// read into LearnerTask values, with the prompt rendered from the phase kind's template.
//
// A task file is one JSON array of objects:
//   end_to_end: {"idx": 17 | "17", "level": "2" | 2, "pytorch_code": "...", ...}
//   infill:     {"id": "6995", "pytorch_code": "...", "prefix": "...", "suffix": "...", ...}
// The id is "id" or else "idx" (a string or a non-negative integer); "level" is optional (a digit
// string or an integer 0..255; absent = no level, taken as level 0 in the Task message); infill
// tasks need "prefix" and "suffix"; "shape_variants" is optional (the task's other shapes,
// tasks/shape_variants.h). Other keys are ignored. Every problem is reported as
// "<file>:[<index>]: what".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/prompt_template.h"
#include "options/curriculum_options.h"
#include "schemas/task.capnp.h"
#include "tasks/shape_variants.h"

namespace dice {

// One task as the learner keeps it; becomes a schema::Task in each request.
struct LearnerTask {
  std::string id;  // the file's id, as text; unique within a phase
  TaskKind kind = TaskKind::kEndToEnd;
  std::string level;              // the file's level as text ("0".."3"); "" when the file has none
  std::uint8_t level_number = 0;  // the level as Task.level wants it; 0 when none
  std::string reference_source;   // pytorch_code
  std::string infill_prefix;      // infill only
  std::string infill_suffix;      // infill only
  std::string prompt;             // rendered from the kind's template
  std::string origin;             // "<file>:[<index>]", for logs
  std::vector<ShapeVariant> shape_variants;  // other shapes the kernel must hold for
};

// Reads one task file. InvalidArgument "<file>:[<index>]: what" for a bad entry, or naming the
// file (and line:column) when it is not a JSON array; NotFound/IOError when it cannot be read.
Result<std::vector<LearnerTask>> load_task_file(const std::string& path, TaskKind kind,
                                                const PromptTemplate& prompt);

// The tasks of one phase in the order sequential select walks them: its files concatenated,
// filtered to level_order's levels and sorted stably by their place in it (file order within a
// level; no filter when level_order is empty). InvalidArgument for a task id used twice in the
// phase (naming both places) or when no task is left.
Result<std::vector<LearnerTask>> load_phase_tasks(
    const CurriculumPhase& phase, const std::map<TaskKind, PromptTemplate>& prompts);

// Orders and filters `tasks` by `level_order` as above (exposed for tests).
std::vector<LearnerTask> order_by_level(std::vector<LearnerTask> tasks,
                                        const std::vector<std::string>& level_order);

// Fills a schema Task from `task` (phase from its kind).
void fill_task(const LearnerTask& task, schema::Task::Builder out);

}  // namespace dice
