// The items dice-judge reads: a JSON array of objects, one per candidate to judge.
//
//   [{"id": 6995,                      number or string
//     "pytorch_code": "...",           the KernelBench reference (class Model, get_inputs...)
//     "prefix": "...", "middle": "...", "suffix": "..."   an infilling task: the candidate is
//                                      prefix + middle + suffix, spliced and skeleton-checked
//                                      as the reward pipeline does for phase 1
//     "cuda_code": "..." or "candidate": "..."   or a whole candidate file (phase 2)
//     "shape_variants": [{"batch_size": 3}]       optional: the task's other shapes
//                                      (tasks/shape_variants.h)
//    }, ...]
// The dev data (kernel_infilling_dev.json) has both prefix/middle/suffix and cuda_code; the
// infilling fields win, since they are what the model is trained on.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "tasks/shape_variants.h"

namespace dice {

struct JudgeItem {
  std::string id;
  std::string variant = "original";  // "original" or the broken variant's name
  std::string reference;             // pytorch_code
  bool infill = false;               // true: prefix + middle + suffix; false: full_source
  std::string prefix, middle, suffix;
  std::string full_source;
  std::string edit;  // for a broken variant: the edit that broke it (judge_variants.h)
  std::vector<ShapeVariant> shape_variants;  // the task's other shapes
};

// The items of the JSON text `text` read from `where` (a path, for messages). Errors name the
// file, the item index and id, and the field: "items.json: item 3 (id 444): \"pytorch_code\" is
// missing".
Result<std::vector<JudgeItem>> parse_judge_items(const std::string& text, const std::string& where);
Result<std::vector<JudgeItem>> load_judge_items(const std::string& path);

// The response text the pipeline is given for `item`: the middle (infill) or the whole file
// (end-to-end) in a ```python fenced block, as a model would write it.
std::string judge_response_text(const JudgeItem& item);

}  // namespace dice
