// dice-data split-infill: reads the candidate or the items file, splits it (infill_items.h) and
// writes the result to --out or standard output.
#pragma once

#include <ostream>

#include "tools/dice-data/cli.h"

namespace dice::data {

// The command's exit status: 0 written; 1 the input could not be read or split, or the output
// not written (the reason on `err`). `out` gets the result when request.out is empty, else the
// line saying what was written; notes (items whose own split was replaced) go to `err`.
int run_split_infill(const SplitInfillRequest& request, std::ostream& out, std::ostream& err);

}  // namespace dice::data
