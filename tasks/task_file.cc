#include "tasks/task_file.h"

#include <algorithm>
#include <boost/json.hpp>
#include <map>

#include "common/json/json_file.h"

namespace dice {
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

Status read_id(const json::object& item, const std::string& where, TaskFileEntry* task) {
  const json::value* id = item.if_contains("id");
  if (id == nullptr) id = item.if_contains("idx");
  if (id == nullptr) return Status::invalid_argument(where + ": missing \"id\" (or \"idx\")");
  DICE_ASSIGN_OR_RETURN(task->id, text_or_integer(*id, "id", where));
  if (task->id.empty()) return Status::invalid_argument(where + ": empty task id");
  if (task->id.find('\0') != std::string::npos) {
    return Status::invalid_argument(where + ": task id holds a NUL byte");
  }
  return Status::ok_status();
}

Status read_skeleton(const json::object& item, const std::string& where, TaskFileEntry* task) {
  DICE_ASSIGN_OR_RETURN(task->prefix, json_string_member(item, "prefix", false, where));
  DICE_ASSIGN_OR_RETURN(task->suffix, json_string_member(item, "suffix", false, where));
  if (task->prefix.empty() && task->suffix.empty()) {
    return Status::invalid_argument(where +
                                    ": an infill task needs a non-empty \"prefix\" or \"suffix\" "
                                    "(the skeleton around the hole; an end-to-end item?)");
  }
  for (const char* key : {"prefix", "suffix"}) {
    if (!item.contains(key)) return Status::invalid_argument(where + ": missing \"" + key + "\"");
  }
  return Status::ok_status();
}

Result<TaskFileEntry> read_task(const json::value& value, schema::Phase phase,
                                const std::string& default_level, const std::string& where) {
  if (!value.is_object()) return Status::invalid_argument(where + ": a task must be a JSON object");
  const json::object& item = value.get_object();
  TaskFileEntry task;
  task.phase = phase;
  task.origin = where;
  DICE_RETURN_IF_ERROR(read_id(item, where, &task));
  task.level = default_level;
  if (const json::value* level = item.if_contains("level")) {
    DICE_ASSIGN_OR_RETURN(task.level, text_or_integer(*level, "level", where));
    if (!is_level_text(task.level)) {
      return Status::invalid_argument(where + ": \"level\" must be 0..255, got \"" + task.level +
                                      "\"");
    }
  }
  if (!task.level.empty()) {
    task.level_number = static_cast<std::uint8_t>(std::stoi(task.level));
    task.level = std::to_string(task.level_number);  // "01" and "1" are one level
  }
  DICE_ASSIGN_OR_RETURN(task.pytorch_code, json_string_member(item, "pytorch_code", true, where));
  if (task.pytorch_code.empty()) {
    return Status::invalid_argument(where + ": \"pytorch_code\" is empty");
  }
  if (phase == schema::Phase::INFILL) DICE_RETURN_IF_ERROR(read_skeleton(item, where, &task));
  DICE_ASSIGN_OR_RETURN(task.shape_variants, read_shape_variants(item, where));
  return task;
}

}  // namespace

bool is_level_text(const std::string& text) {
  return !text.empty() && text.size() <= 3 &&
         std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
         std::stoi(text) <= 255;
}

Result<std::vector<TaskFileEntry>> read_task_file(const std::string& path,
                                                  const TaskFileOptions& options) {
  if (!options.default_level.empty() && !is_level_text(options.default_level)) {
    return Status::invalid_argument("level '" + options.default_level + "': expected 0..255");
  }
  DICE_ASSIGN_OR_RETURN(const json::value root, read_json_file(path));
  if (!root.is_array()) {
    return Status::invalid_argument(path + ": expected a JSON array of tasks, got " +
                                    snippet(root));
  }
  const json::array& items = root.get_array();
  schema::Phase phase = schema::Phase::E2E;
  if (options.phase) {
    phase = *options.phase;
  } else if (!items.empty() && items.front().is_object()) {
    const json::object& first = items.front().get_object();
    if (first.contains("prefix") || first.contains("suffix")) phase = schema::Phase::INFILL;
  }
  std::vector<TaskFileEntry> tasks;
  tasks.reserve(items.size());
  std::map<std::string, std::string> seen;  // id -> origin
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string where = path + ":[" + std::to_string(i) + "]";
    DICE_ASSIGN_OR_RETURN(TaskFileEntry task,
                          read_task(items[i], phase, options.default_level, where));
    auto [it, fresh] = seen.emplace(task.id, where);
    if (!fresh) {
      return Status::invalid_argument(where + ": task id \"" + task.id + "\" already used at " +
                                      it->second);
    }
    tasks.push_back(std::move(task));
  }
  return tasks;
}

}  // namespace dice
