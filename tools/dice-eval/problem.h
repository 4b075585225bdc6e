// One problem of an evaluation: a PyTorch reference the model writes a CUDA kernel for, as
// either form of DICE's tasks (end-to-end: the whole ModelNew file; infill: the core between a
// given prefix and suffix). Every problem-set reader (kernelbench_reader.h, task_json_reader.h)
// makes these; plan.h writes them out as the learner's task JSON
// (learner/curriculum/task_loader.h).
#pragma once

#include <boost/json.hpp>
#include <string>
#include <vector>

#include "options/curriculum_options.h"
#include "tasks/task_file.h"  // is_level_text

namespace dice::eval {

struct Problem {
  std::string id;                       // unique in the set: the task id in the reward log
  std::string level;                    // "1", "2", ... as digits; "" when the source has none
  TaskKind kind = TaskKind::kEndToEnd;  // which prompt and skeleton the learner gives it
  std::string pytorch_code;             // the reference (class Model, get_inputs, ...)
  std::string prefix, suffix;           // infill only: the skeleton around the hole
  boost::json::value shape_variants;    // the task's other shapes (tasks/shape_variants.h); null
                                        // when it has none
  std::string origin;                   // where it was read: "<file>" or "<file>:[<index>]"
};

// "end_to_end" or "infill", as curriculum files name a kind.
inline const char* kind_name(TaskKind kind) {
  return kind == TaskKind::kInfill ? "infill" : "end_to_end";
}

// The problem as one entry of a learner task file: {id, level, pytorch_code} and, for infill,
// prefix and suffix; shape_variants when it has them. Nothing else (a source's reference answers
// stay out of the evaluation's files).
inline boost::json::object learner_task(const Problem& problem) {
  boost::json::object task;
  task["id"] = problem.id;
  if (!problem.level.empty()) task["level"] = problem.level;
  task["pytorch_code"] = problem.pytorch_code;
  if (problem.kind == TaskKind::kInfill) {
    task["prefix"] = problem.prefix;
    task["suffix"] = problem.suffix;
  }
  if (!problem.shape_variants.is_null()) task["shape_variants"] = problem.shape_variants;
  return task;
}

}  // namespace dice::eval
