// Extraction: from the model's response text to the Python file the reward service evaluates.
//
// The response must hold a fenced code block (```python, ```py, or a bare ```). The first such
// block is taken; when the text has no block tagged python/py/untagged, the first block of any
// tag is. A block whose closing fence is missing (generation hit max tokens) runs to the end of
// the text.
//
// Phase 2 (end-to-end): the block is the whole candidate file.
// Phase 1 (infill): the block is the core; the file is prefix + core + suffix. A model that
// writes the whole file anyway is accepted only if the prefix and suffix it wrote equal the
// task's (compared line by line, ignoring trailing spaces and blank lines at the ends); any other
// change of the skeleton is skeletonAltered, since the skeleton is what keeps phase 1 honest.
#pragma once

#include <string>
#include <string_view>

#include "schemas/verdict.capnp.h"

namespace dice {

struct FencedBlock {
  bool found = false;
  bool closed = false;   // false when the text ended before the closing fence
  std::string language;  // the info string after the opening fence, lower-cased, may be empty
  std::string body;      // the lines between the fences, each ending in '\n'
};

// The first fenced code block of `text` (see the rule above).
FencedBlock first_code_block(std::string_view text);

struct ExtractedSource {
  schema::FailureClass failure = schema::FailureClass::NONE;  // NONE on success
  std::string source;                                         // the candidate file on success
  std::string detail;                                         // why, on failure
};

// Phase 1 when `infill_prefix` or `infill_suffix` is non-empty, else phase 2.
ExtractedSource extract_candidate(std::string_view response, std::string_view infill_prefix,
                                  std::string_view infill_suffix);

}  // namespace dice
