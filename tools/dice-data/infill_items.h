// dice-data split-infill on text (split_infill_command.h reads and writes the files): one
// candidate file to its {prefix, middle, suffix}, or a file of items with cuda_code to the same
// items with prefix, middle and suffix set (infill_split.h).
//
// Items come as a JSON array (the text starts with "[": kernel_infilling_dev.json, a curriculum's
// files) or as JSON Lines (one object per line; blank lines skipped), and go out in the same
// form: the array as pretty_json.h writes it, JSON Lines one object per line. Each item keeps
// its members in their order; prefix, middle and suffix replace the item's own where it has
// them, else are added at the end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dice::data {

// {"prefix": ..., "middle": ..., "suffix": ...} and a newline, or split_infill()'s error.
Result<std::string> split_candidate_json(std::string_view candidate, const std::string& where);

struct SplitItems {
  std::string text;                   // the items with their split, in the input's form
  std::size_t items = 0;              // items in the file
  std::size_t had_split = 0;          // items that came with prefix, middle and suffix
  std::vector<std::string> replaced;  // "item 3 (id 6995)" of those whose split differed
};

// The items of `text`, read from `where` (a path, for messages). InvalidArgument for an empty
// file, text that is not JSON ("<where>:<line>:<column>: not JSON (why)"), an item that is not an
// object or has no string cuda_code, and every item whose cuda_code does not split ("<where>:
// item 3 (id 6995): cuda_code:12: why"; JSON Lines name the line: "<where>:4: item 3 ..."), all
// listed (up to 20) in one message.
Result<SplitItems> split_items_text(std::string_view text, const std::string& where);

}  // namespace dice::data
