// dice-data's command line (usage_text() has it all):
//   dice-data curriculum --out DIR [--seed N] [--sft-pairs N] [--rl-tasks-per-level N] ...
//   dice-data split-infill (--candidate FILE.py | --items FILE) [--out FILE]
//   dice-data build-sft --input FILE --out DIR [--min-speedup X] [--noise-z Z] [--form F] ...
// Flags as "--flag value" or "--flag=value".
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "tools/dice-data/build_sft_options.h"
#include "tools/dice-data/curriculum.h"

namespace dice::data {

enum class Command {
  kCurriculum,   // generate a curriculum (curriculum.h)
  kSplitInfill,  // split candidates into prefix / middle / suffix (infill_split.h)
  kBuildSft,     // judge pairs, keep the fast ones as SFT data (build_sft.h)
};

// split-infill's flags: exactly one of candidate and items is set.
struct SplitInfillRequest {
  std::string candidate;  // --candidate: one candidate .py file
  std::string items;      // --items: a JSON array or JSON Lines of items with cuda_code
  std::string out;        // --out: the file to write; empty: standard output
};

struct CliRequest {
  bool help = false;  // --help / -h anywhere: print usage_text() and exit 0
  Command command = Command::kCurriculum;
  std::string out_dir;        // curriculum's --out
  CurriculumOptions options;  // curriculum's other flags
  SplitInfillRequest split;   // split-infill's flags
  BuildSftOptions build_sft;  // build-sft's flags
};

// The arguments after the program name. InvalidArgument naming the argument for anything
// unknown, missing or out of range (main exits 2 on it).
Result<CliRequest> parse_command_line(const std::vector<std::string>& args);

std::string usage_text();

}  // namespace dice::data
