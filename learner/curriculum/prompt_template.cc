#include "learner/curriculum/prompt_template.h"

#include <cctype>

#include "common/read_file.h"
#include "learner/curriculum/builtin_prompts.h"

namespace dice {
namespace {

const char* const kKnownPlaceholders[] = {"reference", "prefix", "suffix", "task_id"};

bool is_known(const std::string& name) {
  for (const char* known : kKnownPlaceholders) {
    if (name == known) return true;
  }
  return false;
}

// The template part of a file: after the '#' header and its "---" line, trailing newlines cut.
// `first_line` gets the 1-based line number the template starts on.
std::string strip_header(const std::string& text, int* first_line) {
  *first_line = 1;
  std::size_t pos = 0;
  int line = 1;
  std::string body = text;
  while (pos < text.size() && text[pos] == '#') {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) break;
    pos = end + 1;
    ++line;
    if (text.compare(pos, 3, "---") == 0 &&
        (pos + 3 == text.size() || text[pos + 3] == '\n' || text[pos + 3] == '\r')) {
      std::size_t after = text.find('\n', pos);
      body = after == std::string::npos ? std::string() : text.substr(after + 1);
      *first_line = line + 1;
      break;
    }
  }
  while (!body.empty() && (body.back() == '\n' || body.back() == '\r')) body.pop_back();
  return body;
}

const char* kind_name(TaskKind kind) {
  return kind == TaskKind::kInfill ? "infill" : "end_to_end";
}

}  // namespace

Result<PromptTemplate> PromptTemplate::parse(const std::string& text, TaskKind kind,
                                             const std::string& origin) {
  int line = 1;
  const std::string body = strip_header(text, &line);
  PromptTemplate result;
  result.origin_ = origin;
  std::string literal;
  bool has_reference = false, has_prefix = false, has_suffix = false;
  for (std::size_t i = 0; i < body.size(); ++i) {
    const char c = body[i];
    if (c == '\n') ++line;
    if (c != '{') {
      literal += c;
      continue;
    }
    std::size_t j = i + 1;
    while (j < body.size() && (std::islower(static_cast<unsigned char>(body[j])) || body[j] == '_'))
      ++j;
    if (j == i + 1 || j >= body.size() || body[j] != '}') {
      literal += c;  // not a placeholder: a literal brace
      continue;
    }
    const std::string name = body.substr(i + 1, j - i - 1);
    if (!is_known(name)) {
      return Status::invalid_argument(origin + ":" + std::to_string(line) +
                                      ": unknown placeholder {" + name +
                                      "}; known: {reference}, {prefix}, {suffix}, {task_id}");
    }
    has_reference |= name == "reference";
    has_prefix |= name == "prefix";
    has_suffix |= name == "suffix";
    result.pieces_.push_back(Piece{std::move(literal), name});
    literal.clear();
    i = j;
  }
  result.pieces_.push_back(Piece{std::move(literal), ""});
  std::string missing;
  if (!has_reference) missing += " {reference}";
  if (kind == TaskKind::kInfill && !has_prefix) missing += " {prefix}";
  if (kind == TaskKind::kInfill && !has_suffix) missing += " {suffix}";
  if (!missing.empty()) {
    return Status::invalid_argument(origin + ": a " + kind_name(kind) + " template must use" +
                                    missing);
  }
  return result;
}

Result<PromptTemplate> PromptTemplate::load_file(const std::string& path, TaskKind kind) {
  Result<std::string> text = read_file(path);
  if (!text.ok()) return text.status().with_context("prompt template");
  return parse(text.value(), kind, path);
}

Result<PromptTemplate> PromptTemplate::builtin(TaskKind kind) {
  return parse(builtin_prompt_text(kind), kind, std::string("built-in ") + kind_name(kind));
}

std::string PromptTemplate::render(const PromptFields& fields) const {
  std::string out;
  for (const Piece& piece : pieces_) {
    out += piece.literal;
    if (piece.placeholder == "reference") out += fields.reference;
    if (piece.placeholder == "prefix") out += fields.prefix;
    if (piece.placeholder == "suffix") out += fields.suffix;
    if (piece.placeholder == "task_id") out += fields.task_id;
  }
  return out;
}

const char* builtin_prompt_text(TaskKind kind) {
  return kind == TaskKind::kInfill ? kBuiltinInfillPrompt : kBuiltinEndToEndPrompt;
}

Result<std::map<TaskKind, PromptTemplate>> load_prompt_templates(
    const std::map<std::string, std::string>& files) {
  std::map<TaskKind, PromptTemplate> templates;
  for (TaskKind kind : {TaskKind::kInfill, TaskKind::kEndToEnd}) {
    auto file = files.find(kind_name(kind));
    if (file != files.end()) {
      DICE_ASSIGN_OR_RETURN(PromptTemplate loaded, PromptTemplate::load_file(file->second, kind));
      templates.emplace(kind, std::move(loaded));
    } else {
      DICE_ASSIGN_OR_RETURN(PromptTemplate loaded, PromptTemplate::builtin(kind));
      templates.emplace(kind, std::move(loaded));
    }
  }
  return templates;
}

}  // namespace dice
