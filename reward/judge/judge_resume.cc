#include "reward/judge/judge_resume.h"

#include <fstream>
#include <sstream>

#include "common/json/fields.h"

namespace dice {

Result<JudgedSoFar> read_judged(const std::string& path) {
  JudgedSoFar so_far;
  std::ifstream in(path, std::ios::binary);
  if (!in) return so_far;
  std::stringstream text;
  text << in.rdbuf();
  const std::string all = text.str();
  std::size_t begin = 0;
  for (int line = 1;; ++line) {
    const std::size_t end = all.find('\n', begin);
    if (end == std::string::npos) break;  // the rest is a cut line, or nothing
    const std::string_view row(all.data() + begin, end - begin);
    if (!row.empty()) {
      const std::string where = path + ": line " + std::to_string(line);
      DICE_ASSIGN_OR_RETURN(boost::json::value value, parse_json(row, where));
      const std::string id = value.is_object() ? json_id(value) : "";
      if (id.empty()) return Status::invalid_argument(where + ": not a verdict with an \"id\"");
      so_far.done.emplace(id, json_string(value, "variant", "original"));
    }
    begin = end + 1;
    so_far.complete_bytes = begin;
  }
  return so_far;
}

std::vector<JudgeItem> left_to_judge(const std::vector<JudgeItem>& all, const JudgedSoFar& so_far) {
  std::vector<JudgeItem> left;
  for (const JudgeItem& item : all) {
    if (!so_far.done.count({item.id, item.variant})) left.push_back(item);
  }
  return left;
}

}  // namespace dice
