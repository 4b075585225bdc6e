#include "reward/extract.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace dice {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string_view rstrip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view lstrip(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  return s;
}

// A fence line: up to three spaces of indent, then three or more backticks. Returns the info
// string (after the backticks) through `info`.
bool is_fence(std::string_view line, std::string_view* info) {
  size_t indent = 0;
  while (indent < line.size() && line[indent] == ' ') ++indent;
  if (indent > 3) return false;
  line.remove_prefix(indent);
  size_t ticks = 0;
  while (ticks < line.size() && line[ticks] == '`') ++ticks;
  if (ticks < 3) return false;
  *info = lstrip(rstrip(line.substr(ticks)));
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_python_tag(const std::string& language) {
  return language.empty() || language == "python" || language == "py" || language == "python3";
}

// Lines with trailing spaces dropped and blank lines at both ends removed: the form in which
// skeleton text is compared, so that editors' whitespace habits do not count as changes.
std::vector<std::string_view> normalized_lines(std::string_view text) {
  std::vector<std::string_view> lines = split_lines(text);
  for (auto& line : lines) line = rstrip(line);
  auto first = std::find_if(lines.begin(), lines.end(), [](auto l) { return !l.empty(); });
  auto last = std::find_if(lines.rbegin(), lines.rend(), [](auto l) { return !l.empty(); });
  if (first == lines.end()) return {};
  return std::vector<std::string_view>(first, last.base());
}

// Markers of the suffix: a core that contains them has rewritten the skeleton's part.
bool writes_skeleton(std::string_view block) {
  return block.find("class ModelNew") != std::string_view::npos ||
         block.find("load_inline(") != std::string_view::npos;
}

ExtractedSource failure(schema::FailureClass kind, std::string detail) {
  ExtractedSource out;
  out.failure = kind;
  out.detail = std::move(detail);
  return out;
}

std::string join_lines(const std::vector<std::string_view>& lines, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    out.append(lines[i]);
    out.push_back('\n');
  }
  return out;
}

ExtractedSource splice(std::string_view block, std::string_view prefix, std::string_view suffix) {
  std::vector<std::string_view> lines = normalized_lines(block);
  size_t begin = 0;
  size_t end = lines.size();
  const std::vector<std::string_view> prefix_lines = normalized_lines(prefix);
  if (!prefix_lines.empty() && lines.size() >= prefix_lines.size() &&
      std::equal(prefix_lines.begin(), prefix_lines.end(), lines.begin())) {
    begin = prefix_lines.size();  // the model repeated the imports verbatim: keep one copy
  }
  if (writes_skeleton(block)) {
    const std::vector<std::string_view> suffix_lines = normalized_lines(suffix);
    if (end - begin < suffix_lines.size() ||
        !std::equal(suffix_lines.begin(), suffix_lines.end(), lines.end() - suffix_lines.size())) {
      return failure(schema::FailureClass::SKELETON_ALTERED,
                     "the code block rewrites the fixed suffix (load_inline / class ModelNew) "
                     "with different text");
    }
    end -= suffix_lines.size();
  }
  // Blank lines between the skeleton and the core belong to the skeleton's own text.
  while (begin < end && lines[begin].empty()) ++begin;
  while (end > begin && lines[end - 1].empty()) --end;
  std::string core = join_lines(lines, begin, end);
  if (rstrip(core).empty()) {
    return failure(schema::FailureClass::NO_CODE_BLOCK,
                   "the code block has no core between the "
                   "fixed prefix and suffix");
  }
  ExtractedSource out;
  out.source.reserve(prefix.size() + core.size() + suffix.size() + 1);
  out.source.append(prefix);
  if (!out.source.empty() && out.source.back() != '\n') out.source.push_back('\n');
  out.source.append(core);
  out.source.append(suffix);
  return out;
}

}  // namespace

FencedBlock first_code_block(std::string_view text) {
  const std::vector<std::string_view> lines = split_lines(text);
  FencedBlock first_any;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view info;
    if (!is_fence(lines[i], &info)) continue;
    FencedBlock block;
    block.found = true;
    // The tag is the first word of the info string ("python title=x" -> "python").
    block.language = lower(info.substr(0, info.find_first_of(" \t{")));
    size_t j = i + 1;
    std::string_view close_info;
    for (; j < lines.size(); ++j) {
      if (is_fence(lines[j], &close_info) && close_info.empty()) break;
      block.body.append(lines[j]);
      block.body.push_back('\n');
    }
    block.closed = j < lines.size();
    if (is_python_tag(block.language)) return block;
    if (!first_any.found) first_any = block;
    i = j;  // continue after this block's closing fence
  }
  return first_any;
}

ExtractedSource extract_candidate(std::string_view response, std::string_view infill_prefix,
                                  std::string_view infill_suffix) {
  FencedBlock block = first_code_block(response);
  if (!block.found) {
    return failure(schema::FailureClass::NO_CODE_BLOCK, "the response has no ``` code block");
  }
  if (rstrip(block.body).empty()) {
    return failure(schema::FailureClass::NO_CODE_BLOCK, "the first code block is empty");
  }
  if (infill_prefix.empty() && infill_suffix.empty()) {
    ExtractedSource out;
    out.source = std::move(block.body);
    return out;
  }
  return splice(block.body, infill_prefix, infill_suffix);
}

}  // namespace dice
