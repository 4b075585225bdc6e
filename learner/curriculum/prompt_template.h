// Prompt templates: the text a task's prompt is rendered from, one template per task kind.
//
// The templates live in configs/prompts/{infill,end_to_end}.txt; rollout.prompt_templates names
// the files to use, and a kind it leaves out gets the built-in template, which is the text of the
// file in configs/prompts compiled in (learner/CMakeLists.txt embeds it at build time).
//
// File format: optional header comment lines starting with '#', ended by a line "---"; the rest
// is the template, with trailing newlines removed. Placeholders {reference}, {prefix}, {suffix}
// and {task_id} are replaced once each (values are never scanned again, so code full of braces is
// safe); any other {lowercase_name} is an error, caught when the template is parsed. Other braces
// are literal.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "options/curriculum_options.h"

namespace dice {

// What a template may refer to.
struct PromptFields {
  std::string reference;  // {reference}: the PyTorch reference program
  std::string prefix;     // {prefix}: infill skeleton before the hole
  std::string suffix;     // {suffix}: infill skeleton after the hole
  std::string task_id;    // {task_id}
};

class PromptTemplate {
 public:
  // Parses `text` (file format above). InvalidArgument naming `origin` and the line for an unknown
  // placeholder, or a missing one the kind needs ({reference}; infill also {prefix}, {suffix}).
  static Result<PromptTemplate> parse(const std::string& text, TaskKind kind,
                                      const std::string& origin);
  // Reads and parses a template file; NotFound/IOError name the file.
  static Result<PromptTemplate> load_file(const std::string& path, TaskKind kind);
  // The built-in template of `kind` (configs/prompts/<kind>.txt as compiled in); an error only if
  // that file was broken at build time (a test checks it is not).
  static Result<PromptTemplate> builtin(TaskKind kind);

  std::string render(const PromptFields& fields) const;
  // Where the template came from: a path, or "built-in <kind>".
  const std::string& origin() const { return origin_; }

 private:
  struct Piece {
    std::string literal;      // text before the placeholder
    std::string placeholder;  // "" for the final piece
  };
  std::vector<Piece> pieces_;
  std::string origin_;
};

// The built-in template text of `kind`, header included (what configs/prompts/<kind>.txt held at
// build time).
const char* builtin_prompt_text(TaskKind kind);

// One template per kind: the files named in `files` (rollout.prompt_templates: "infill",
// "end_to_end" -> path), built-in for a kind not named. Errors name the file.
Result<std::map<TaskKind, PromptTemplate>> load_prompt_templates(
    const std::map<std::string, std::string>& files);

}  // namespace dice
