#include "common/log.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <ctime>

namespace dice {
namespace {

LogOptions& mutable_options() {
  static LogOptions options;
  return options;
}

}  // namespace

const char* log_level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

namespace {

std::string utc_timestamp() {
  using namespace std::chrono;
  auto now = system_clock::now();
  std::time_t seconds = system_clock::to_time_t(now);
  auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[48];
  std::snprintf(out, sizeof out, "%s.%03dZ", buf, static_cast<int>(millis));
  return out;
}

}  // namespace

void log_configure(const LogOptions& options) {
  mutable_options() = options;
}
const LogOptions& log_options() {
  return mutable_options();
}
bool log_enabled(LogLevel level) {
  return level >= mutable_options().level;
}

bool parse_log_level(const std::string& text, LogLevel* level) {
  static const struct {
    const char* name;
    LogLevel level;
  } kLevels[] = {{"debug", LogLevel::kDebug},
                 {"info", LogLevel::kInfo},
                 {"warn", LogLevel::kWarn},
                 {"error", LogLevel::kError}};
  for (const auto& entry : kLevels) {
    if (text == entry.name) {
      *level = entry.level;
      return true;
    }
  }
  return false;
}

std::string logfmt_quote(const std::string& value) {
  bool needs_quotes = value.empty();
  for (char c : value) {
    if (c == ' ' || c == '"' || c == '=' || c == '\\' || static_cast<unsigned char>(c) < 0x20) {
      needs_quotes = true;
      break;
    }
  }
  if (!needs_quotes) return value;
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

LogLine::LogLine(LogLevel level, const char* file, int line)
    : level_(level), file_(file), line_(line) {}

LogLine& LogLine::operator<<(const LogField& field) {
  fields_ += ' ';
  fields_ += field.key;
  fields_ += '=';
  fields_ += logfmt_quote(field.value);
  return *this;
}

LogLine::~LogLine() {
  const LogOptions& options = log_options();
  const char* base = std::strrchr(file_, '/');
  base = base ? base + 1 : file_;
  std::string text = "ts=" + utc_timestamp() + " level=" + log_level_name(level_) +
                     " run=" + logfmt_quote(options.run_id) +
                     " component=" + logfmt_quote(options.component) + " at=" + base + ":" +
                     std::to_string(line_) + " msg=" + logfmt_quote(message_.str()) + fields_ +
                     "\n";
  // One write(2) so concurrent lines from threads never interleave.
  ssize_t ignored = ::write(STDERR_FILENO, text.data(), text.size());
  (void)ignored;
}

}  // namespace dice
