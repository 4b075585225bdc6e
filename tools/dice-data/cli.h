// dice-data's command line: "dice-data curriculum --out DIR [--seed N] [--sft-pairs N]
// [--rl-tasks-per-level N] [--heldout-per-level N]", flags as "--flag value" or "--flag=value".
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "tools/dice-data/curriculum.h"

namespace dice::data {

struct CliRequest {
  bool help = false;  // --help / -h anywhere: print usage_text() and exit 0
  std::string out_dir;
  CurriculumOptions options;
};

// The arguments after the program name. InvalidArgument naming the argument for anything
// unknown, missing or out of range (main exits 2 on it).
Result<CliRequest> parse_command_line(const std::vector<std::string>& args);

std::string usage_text();

}  // namespace dice::data
