// Task files (the format of the DICE release, REFERENCE.md section 7), read by one set of rules
// for every reader: the learner's curriculum phases (learner/curriculum/task_loader.h) and
// dice-eval's problem sets (tools/dice-eval/task_json_reader.h). A task file is one JSON array of
// objects:
//
//   end-to-end: {"idx" | "id": 17 | "17", "level": "2" | 2, "pytorch_code": "...", ...}
//   infill:     {"id": "6995", "pytorch_code": "...", "prefix": "...", "suffix": "...", ...}
//
//   id              "id", else "idx": a string or a non-negative integer, kept as text; not empty,
//                   no NUL byte, unique within the file
//   level           optional: a digit string or an integer, 0..255, kept as digits without
//                   leading zeros ("01" and "1" are one level); absent: the reader's default
//   pytorch_code    the reference: a non-empty string
//   prefix, suffix  infill only (ignored for end-to-end): both strings, at least one non-empty
//                   (the skeleton around the hole)
//   shape_variants  optional: the task's other shapes (tasks/shape_variants.h)
//
// Other keys are ignored (reference answers such as cuda_code, middle, raw_answer are not read).
// Every problem is an InvalidArgument "<file>:[<index>]: what"; a file that is not JSON names
// "<file>:<line>:<column>".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "schemas/task.capnp.h"
#include "tasks/shape_variants.h"

namespace dice {

// One task of a file, as read; each reader adds what it needs (the learner a prompt).
struct TaskFileEntry {
  std::string id;                            // the file's id, as text
  schema::Phase phase = schema::Phase::E2E;  // the file's kind: INFILL or E2E
  std::string level;                         // digits ("0".."255"), or "" for none
  std::uint8_t level_number = 0;             // the level as Task.level wants it; 0 for none
  std::string pytorch_code;                  // the reference
  std::string prefix, suffix;                // infill only: the skeleton around the hole
  std::vector<ShapeVariant> shape_variants;  // other shapes the kernel must hold for
  std::string origin;                        // "<file>:[<index>]", for errors and logs
};

struct TaskFileOptions {
  // The file's kind. Unset: infill when the first item has "prefix" or "suffix", else end-to-end.
  std::optional<schema::Phase> phase;
  // The level of items without one: digits 0..255, or "" for none.
  std::string default_level;
};

// Whether `text` is a level as task files write one: 1-3 digits, 0..255.
bool is_level_text(const std::string& text);

// The tasks of one file, in file order (an empty array gives none). InvalidArgument as above,
// and for a bad default_level; NotFound / IOError naming the file when it cannot be read.
Result<std::vector<TaskFileEntry>> read_task_file(const std::string& path,
                                                  const TaskFileOptions& options = {});

}  // namespace dice
