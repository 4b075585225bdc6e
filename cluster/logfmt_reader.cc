#include "cluster/logfmt_reader.h"

namespace dice::cluster {
namespace {

// Reads a quoted value starting at line[*i] == '"'; moves *i past the closing quote. False when
// the quote is not closed before `end`.
bool read_quoted(const std::string& line, std::size_t end, std::size_t* i, std::string* value) {
  for (std::size_t j = *i + 1; j < end; ++j) {
    const char c = line[j];
    if (c == '"') {
      *i = j + 1;
      return true;
    }
    if (c != '\\' || j + 1 == end) {
      *value += c;
      continue;
    }
    const char escaped = line[++j];
    switch (escaped) {
      case 'n':
        *value += '\n';
        break;
      case 't':
        *value += '\t';
        break;
      case 'r':
        *value += '\r';
        break;
      default:  // \" and \\ stand for themselves
        *value += escaped;
    }
  }
  return false;
}

}  // namespace

const std::string& LogfmtLine::get(const std::string& key) const {
  static const std::string kNone;
  for (const auto& field : fields) {
    if (field.key == key) return field.value;
  }
  return kNone;
}

bool LogfmtLine::has(const std::string& key) const {
  for (const auto& field : fields) {
    if (field.key == key) return true;
  }
  return false;
}

std::optional<LogfmtLine> parse_logfmt(const std::string& line) {
  std::size_t end = line.size();
  while (end > 0 && (line[end - 1] == '\n' || line[end - 1] == '\r')) --end;
  LogfmtLine parsed;
  std::size_t i = 0;
  while (i < end) {
    if (line[i] == ' ') {
      ++i;
      continue;
    }
    const std::size_t key_end = line.find_first_of("= ", i);
    if (key_end == std::string::npos || key_end >= end || line[key_end] != '=' || key_end == i) {
      return std::nullopt;
    }
    LogField field{line.substr(i, key_end - i), ""};
    i = key_end + 1;
    if (i < end && line[i] == '"') {
      if (!read_quoted(line, end, &i, &field.value)) return std::nullopt;
    } else {
      const std::size_t value_end = std::min(line.find(' ', i), end);
      field.value = line.substr(i, value_end - i);
      i = value_end;
    }
    parsed.fields.push_back(std::move(field));
  }
  if (parsed.fields.empty()) return std::nullopt;
  return parsed;
}

}  // namespace dice::cluster
