// Tasks of the curriculum: task files (the format of the DICE release, read by the rules of
// tasks/task_file.h, as dice-eval reads them) as LearnerTask values, with the prompt rendered
// from the phase kind's template. A phase's kind is its files' kind; a task without a level is
// level 0 in the Task message. Every problem is reported as "<file>:[<index>]: what".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/prompt_template.h"
#include "options/curriculum_options.h"
#include "schemas/task.capnp.h"
#include "tasks/task_file.h"

namespace dice {

// One task as the learner keeps it; becomes a schema::Task in each request.
struct LearnerTask {
  std::string id;  // the file's id, as text; unique within a phase
  TaskKind kind = TaskKind::kEndToEnd;
  std::string level;              // the level as digits ("0".."255"); "" when the file has none
  std::uint8_t level_number = 0;  // the level as Task.level wants it; 0 when none
  std::string reference_source;   // pytorch_code
  std::string infill_prefix;      // infill only
  std::string infill_suffix;      // infill only
  std::string prompt;             // rendered from the kind's template
  std::string origin;             // "<file>:[<index>]", for logs
  std::vector<ShapeVariant> shape_variants;  // other shapes the kernel must hold for
};

// Reads one task file of `kind` (tasks/task_file.h: InvalidArgument "<file>:[<index>]: what" for a
// bad entry, or naming the file and line:column when it is not a JSON array; NotFound/IOError
// when it cannot be read).
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
