#include "tools/dice-eval/kernelbench_reader.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>

#include "common/read_file.h"

namespace dice::eval {
namespace fs = std::filesystem;
namespace {

// The three top-level definitions a KernelBench problem has, as a line starts with them.
struct Definition {
  const char* name;
  std::regex line;
};

const std::vector<Definition>& definitions() {
  static const auto* const kDefinitions = new std::vector<Definition>{
      {"class Model", std::regex(R"(^class\s+Model\s*[(:])")},
      {"def get_inputs", std::regex(R"(^def\s+get_inputs\s*\()")},
      {"def get_init_inputs", std::regex(R"(^def\s+get_init_inputs\s*\()")},
  };
  return *kDefinitions;
}

std::string file_name(const std::string& path) {
  return fs::path(path).filename().string();
}

// The last name of a folder path, also when it ends in a slash ("a/level1/" -> "level1").
std::string folder_name(const std::string& dir) {
  const fs::path normal = fs::absolute(dir).lexically_normal();
  return normal.has_filename() ? normal.filename().string()
                               : normal.parent_path().filename().string();
}

}  // namespace

Status check_kernelbench_source(const std::string& text, const std::string& where) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status::invalid_argument(where + ": not a KernelBench problem: the file is empty");
  }
  std::vector<bool> found(definitions().size(), false);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    for (std::size_t i = 0; i < definitions().size(); ++i) {
      if (!found[i] && std::regex_search(line, definitions()[i].line)) found[i] = true;
    }
  }
  std::string missing;
  for (std::size_t i = 0; i < found.size(); ++i) {
    if (!found[i])
      missing += (missing.empty() ? "`" : ", `") + std::string(definitions()[i].name) + "`";
  }
  if (missing.empty()) return Status::ok_status();
  return Status::invalid_argument(where + ": not a KernelBench problem: no top-level " + missing +
                                  " (a problem defines class Model, get_inputs and "
                                  "get_init_inputs)");
}

std::string level_of_folder(const std::string& dir) {
  static const std::regex kLevel(R"(level(\d{1,3}))");
  std::smatch match;
  const std::string name = folder_name(dir);
  if (!std::regex_match(name, match, kLevel)) return "";
  const int level = std::stoi(match[1].str());
  return level <= 255 ? std::to_string(level) : "";
}

std::vector<std::pair<std::string, std::string>> find_level_folders(const std::string& dir) {
  for (const fs::path& base : {fs::path(dir), fs::path(dir) / "KernelBench"}) {
    std::error_code ec;
    if (!fs::is_directory(base, ec)) continue;
    std::vector<std::pair<std::string, std::string>> levels;
    for (const auto& entry : fs::directory_iterator(base, ec)) {
      if (!entry.is_directory(ec)) continue;
      const std::string level = level_of_folder(entry.path().string());
      if (!level.empty()) levels.emplace_back(level, entry.path().string());
    }
    if (levels.empty()) continue;
    std::sort(levels.begin(), levels.end(),
              [](const auto& a, const auto& b) { return std::stoi(a.first) < std::stoi(b.first); });
    return levels;
  }
  return {};
}

Result<std::vector<Problem>> read_kernelbench_folder(const std::string& dir,
                                                     const std::string& level) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Status::not_found(dir + ": no such folder");
  if (!fs::is_directory(dir, ec)) return Status::invalid_argument(dir + ": not a folder");
  static const std::regex kName(R"((\d+)_(.+)\.py)");
  std::map<long long, std::string> files;  // problem number -> path
  fs::directory_iterator entries(dir, ec);
  if (ec) return Status::io_error(dir + ": cannot list: " + ec.message());
  for (const auto& entry : entries) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".py" || entry.is_directory(ec)) continue;
    std::smatch match;
    const std::string name = file_name(path);
    if (!std::regex_match(name, match, kName) || match[1].length() > 9) {
      return Status::invalid_argument(path +
                                      ": not a KernelBench problem file name: expected "
                                      "<n>_<Name>.py (such as 19_ReLU.py)");
    }
    const long long number = std::stoll(match[1].str());
    auto [it, fresh] = files.emplace(number, path);
    if (!fresh) {
      return Status::invalid_argument(path + ": problem number " + std::to_string(number) +
                                      " is also " + file_name(it->second));
    }
  }
  if (files.empty()) {
    return Status::invalid_argument(dir +
                                    ": no KernelBench problem files (<n>_<Name>.py) in this "
                                    "folder");
  }
  const std::string folder = folder_name(dir);
  std::vector<Problem> problems;
  for (const auto& [number, path] : files) {
    DICE_ASSIGN_OR_RETURN(std::string text, read_file(path));
    DICE_RETURN_IF_ERROR(check_kernelbench_source(text, path));
    Problem problem;
    problem.id = folder + "/" + fs::path(path).stem().string();
    problem.level = level;
    problem.kind = TaskKind::kEndToEnd;
    problem.pytorch_code = std::move(text);
    problem.origin = path;
    problems.push_back(std::move(problem));
  }
  return problems;
}

}  // namespace dice::eval
