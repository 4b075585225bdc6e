// The files of a curriculum (README.md lists them and their fields): sft.json, rl_infill.json,
// rl_e2e.json, heldout_infill.json, heldout_e2e.json, heldout_indist_infill.json,
// heldout_indist_e2e.json, verify_items.json (every pair once, as dice-judge items:
// reward/judge_items.h) and MANIFEST.json (seed, version, counts, held-out keys).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tools/dice-data/curriculum.h"

namespace dice::data {

// Every file as (name, text), MANIFEST.json last; the same curriculum gives the same bytes.
std::vector<std::pair<std::string, std::string>> curriculum_files(const Curriculum& curriculum);

// Writes the files into `dir`, creating it; each file goes to a temporary name first and is
// renamed into place, so a reader never sees half a file. IOError naming the path on failure.
Status write_curriculum(const Curriculum& curriculum, const std::string& dir);

}  // namespace dice::data
