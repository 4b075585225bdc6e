#include "tools/dice-eval/task_json_reader.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "common/json/parse_text.h"
#include "common/read_file.h"

namespace dice::eval {
namespace json = boost::json;
namespace {

std::string snippet(const json::value& value) {
  return json::serialize(value).substr(0, 40);
}

// An id or level written as a string or a non-negative integer, as text.
Result<std::string> text_or_integer(const json::value& value, const char* key,
                                    const std::string& where) {
  if (value.is_string()) return std::string(value.get_string());
  if (value.is_uint64()) return std::to_string(value.get_uint64());
  if (value.is_int64() && value.get_int64() >= 0) return std::to_string(value.get_int64());
  return Status::invalid_argument(where + ": \"" + key +
                                  "\" must be a string or a non-negative integer, got " +
                                  snippet(value));
}

Result<std::string> string_member(const json::object& item, const char* key,
                                  const std::string& where) {
  const json::value* value = item.if_contains(key);
  if (value == nullptr) return std::string();
  if (!value->is_string()) {
    return Status::invalid_argument(where + ": \"" + key + "\" must be a string, got " +
                                    snippet(*value));
  }
  return std::string(value->get_string());
}

Result<Problem> read_item(const json::value& value, TaskKind kind, const std::string& level,
                          const std::string& where) {
  if (!value.is_object()) return Status::invalid_argument(where + ": a task must be a JSON object");
  const json::object& item = value.get_object();
  Problem problem;
  problem.kind = kind;
  problem.origin = where;
  const json::value* id = item.if_contains("id");
  if (id == nullptr) id = item.if_contains("idx");
  if (id == nullptr) return Status::invalid_argument(where + ": missing \"id\" (or \"idx\")");
  DICE_ASSIGN_OR_RETURN(problem.id, text_or_integer(*id, "id", where));
  if (problem.id.empty() || problem.id.find('\0') != std::string::npos) {
    return Status::invalid_argument(where + ": the id is empty or holds a NUL byte");
  }
  problem.level = level;
  if (const json::value* given = item.if_contains("level")) {
    DICE_ASSIGN_OR_RETURN(problem.level, text_or_integer(*given, "level", where));
    if (!is_level_text(problem.level)) {
      return Status::invalid_argument(where + ": \"level\" must be 0..255, got \"" + problem.level +
                                      "\"");
    }
    problem.level = std::to_string(std::stoi(problem.level));  // "01" and "1" are one level
  }
  DICE_ASSIGN_OR_RETURN(problem.pytorch_code, string_member(item, "pytorch_code", where));
  if (problem.pytorch_code.empty()) {
    return Status::invalid_argument(where + ": no \"pytorch_code\" (or it is empty)");
  }
  DICE_ASSIGN_OR_RETURN(problem.prefix, string_member(item, "prefix", where));
  DICE_ASSIGN_OR_RETURN(problem.suffix, string_member(item, "suffix", where));
  if (kind == TaskKind::kInfill && problem.prefix.empty() && problem.suffix.empty()) {
    return Status::invalid_argument(where +
                                    ": an infill task needs a non-empty \"prefix\" or \"suffix\" "
                                    "(an end-to-end item in an infilling file?)");
  }
  if (kind == TaskKind::kEndToEnd) {
    problem.prefix.clear();  // an infilling file read as end-to-end: the skeleton is not given
    problem.suffix.clear();
  }
  if (const json::value* variants = item.if_contains("shape_variants")) {
    problem.shape_variants = *variants;
  }
  return problem;
}

}  // namespace

Result<std::vector<Problem>> read_task_json(const std::string& path,
                                            const TaskJsonOptions& options) {
  DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
  boost::system::error_code error;
  std::string position;
  const json::value root = parse_json_text(text, &error, &position);
  if (error) {
    return Status::invalid_argument(path + ":" + position + ": not JSON: " + error.message());
  }
  if (!root.is_array()) {
    return Status::invalid_argument(path + ": expected a JSON array of tasks, got " +
                                    snippet(root));
  }
  const json::array& items = root.get_array();
  if (items.empty()) return Status::invalid_argument(path + ": the array holds no task");
  if (!options.level.empty() && !is_level_text(options.level)) {
    return Status::invalid_argument("level '" + options.level + "': expected 0..255");
  }
  TaskKind kind = TaskKind::kEndToEnd;
  if (options.kind) {
    kind = *options.kind;
  } else if (items.front().is_object()) {
    const json::object& first = items.front().get_object();
    if (first.contains("prefix") || first.contains("suffix")) kind = TaskKind::kInfill;
  }
  std::vector<Problem> problems;
  std::map<std::string, std::size_t> seen;  // id -> index
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = path + ":[" + std::to_string(i) + "]";
    DICE_ASSIGN_OR_RETURN(Problem problem, read_item(items[i], kind, options.level, where));
    auto [it, fresh] = seen.emplace(problem.id, i);
    if (!fresh) {
      return Status::invalid_argument(where + ": task id \"" + problem.id + "\" is also [" +
                                      std::to_string(it->second) + "]'s");
    }
    problems.push_back(std::move(problem));
  }
  return problems;
}

std::vector<std::pair<std::string, TaskKind>> heldout_files(const std::string& dir) {
  std::vector<std::pair<std::string, TaskKind>> files;
  for (const auto& [name, kind] : {std::pair{"heldout_infill.json", TaskKind::kInfill},
                                   std::pair{"heldout_e2e.json", TaskKind::kEndToEnd}}) {
    const std::filesystem::path path = std::filesystem::path(dir) / name;
    std::error_code ec;
    if (std::filesystem::is_regular_file(path, ec)) files.emplace_back(path.string(), kind);
  }
  return files;
}

}  // namespace dice::eval
