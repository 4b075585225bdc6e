// Config problems, and how they become one Status that says what and where:
//
//   configs/local.yaml:14:9: learner.optimizer.lr: expected a number, got 'abc'
//   override 'rollout.top_k=-1': rollout.top_k: must be >= 0, got -1
//
// Checks find problems by key path; ErrorLocator turns a key path into the place the value came
// from: file:line:column of its YAML node (or of its nearest present ancestor, for a missing key),
// or the command-line override that set it.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dice::config {

// 1-based line and column; 0 when unknown (a node built by an override, an empty file).
struct Position {
  int line = 0;
  int column = 0;
};

struct ConfigError {
  std::string path;     // "learner.optimizer.lr", "cluster.nodes[0].host"; "" = the whole file
  std::string message;  // "expected a number, got 'abc'"
  Position at;          // where, when the key path alone cannot say (a duplicate key)
};

// "a" + "b" -> "a.b"; "" + "b" -> "b"; "a" + "[2]" -> "a[2]".
std::string join_path(const std::string& parent, const std::string& key);
std::string index_path(const std::string& parent, std::size_t index);

// Handed to a section's `validate(Checker&) const`, which checks relations between fields.
class Checker {
 public:
  Checker(std::string path, std::vector<ConfigError>* errors)
      : path_(std::move(path)), errors_(errors) {}

  // A problem with `key` of this section ("nodes[0].host" works too; "" = the section itself).
  void error(const std::string& key, const std::string& message) {
    errors_->push_back({join_path(path_, key), message, {}});
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<ConfigError>* errors_;
};

class ErrorLocator {
 public:
  explicit ErrorLocator(std::string file_name) : file_name_(std::move(file_name)) {}

  void add_position(const std::string& path, Position position) { positions_[path] = position; }
  // An override "a.b=c" whose key path (normalised, "nodes[0].host") is `path`.
  void add_override(const std::string& path, const std::string& text) {
    overrides_.emplace_back(path, text);
  }

  // The override that set `path`, set a value above it, or created a section on its way to a
  // value below it; nullptr if the value came from the file.
  const std::string* override_for(const std::string& path) const;

  // "file:line:col", "override 'a=b'", or the file name alone.
  std::string locate(const std::string& path) const;

  // One invalid-argument Status listing every error, one per line, each located; ok if none.
  Status to_status(const std::vector<ConfigError>& errors) const;

  const std::string& file_name() const { return file_name_; }

 private:
  std::string file_name_;
  std::map<std::string, Position> positions_;
  std::vector<std::pair<std::string, std::string>> overrides_;
};

}  // namespace dice::config
