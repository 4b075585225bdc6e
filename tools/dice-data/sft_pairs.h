// The input of dice-data build-sft: PyTorch -> CUDA pairs, as data/dice-rl's files and a
// curriculum's verify_items.json hold them, in a JSON array or JSON Lines (item_file.h):
//
//   {"id": 6995 | "idx": ...,           optional, a string or an integer; else "item-<index>"
//    "level": "1" | 1,                  optional; the report counts by it ("" when absent)
//    "pytorch_code": "...",             the KernelBench reference (class Model, get_inputs...)
//    "cuda_code": "...",                the candidate file (load_inline, class ModelNew)
//    "shape_variants": [{"batch_size": 3}]   optional: the task's other shapes, judged too
//   }
//
// Other members (prefix/middle/suffix, raw_answer...) are ignored: the whole cuda_code is judged.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "reward/judge/judge_items.h"
#include "tasks/shape_variants.h"

namespace dice::data {

struct SftPair {
  std::string id;     // "id" or "idx" as text; "item-<index>" when the item has neither
  std::string level;  // "level" as text (an integer in decimal); "" when absent
  std::string pytorch_code;
  std::string cuda_code;
  std::vector<ShapeVariant> shape_variants;
  // A content hash of what the judge sees (reference, candidate, shape variants): a verdict
  // recorded for this id counts only for the same hash (build_sft.h).
  std::string hash;
};

// The pairs of `text`, read from `where` (a path, for messages). InvalidArgument for an empty
// file, text that is not JSON ("<where>:<line>:<column>: not JSON (why)"), and, all listed (up to
// 20) in one message, every item that is not an object, lacks "pytorch_code" or "cuda_code" or
// has one that is not a non-empty string, has an "id" that is neither a non-empty string nor an
// integer, bad shape variants, or an id an earlier item has: "<where>: item 3 (id 6995):
// \"cuda_code\" is missing" (JSON Lines name the line: "<where>:4: item 3 ...").
Result<std::vector<SftPair>> parse_sft_pairs(std::string_view text, const std::string& where);

// The pair as dice-judge judges a whole candidate (reward/judge/judge_items.h).
JudgeItem judge_item(const SftPair& pair);

}  // namespace dice::data
