// dice-judge --resume: the candidates an earlier run already wrote to its --out file are not
// judged again, so a long pass (the curriculum's 3,576 verify items take about an hour on one
// H200) can go on over several commands. A verdict line names its candidate by id and variant.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "reward/judge/judge_items.h"

namespace dice {

struct JudgedSoFar {
  std::set<std::pair<std::string, std::string>> done;  // (id, variant) of each complete line
  // Bytes up to the end of the last complete line: a line cut by a kill is dropped (its
  // candidate is judged again) by cutting the file here before appending.
  std::uint64_t complete_bytes = 0;
};

// What `path` (verdict lines, JSON Lines) holds; a missing file holds nothing. InvalidArgument
// naming the file and line for a complete line that is not a verdict object with an id.
Result<JudgedSoFar> read_judged(const std::string& path);

// `all` less those `so_far` holds, in order.
std::vector<JudgeItem> left_to_judge(const std::vector<JudgeItem>& all, const JudgedSoFar& so_far);

}  // namespace dice
