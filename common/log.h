// Structured logging: one logfmt line per event, every line carrying the run id and component.
//
//   DICE_LOG(Info) << "compiled kernel" << dice::kv("task", task_id) << dice::kv("ms", ms);
//   -> ts=2026-11-29T23:59:01.123Z level=info run=r7f3 component=reward at=worker.cc:42
//      msg="compiled kernel" task=17 ms=812
//
// Lines below the configured level cost one comparison: the stream is never built.
#pragma once

#include <sstream>
#include <string>

namespace dice {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

struct LogOptions {
  LogLevel level = LogLevel::kInfo;  // lines below this are skipped. Default: info
  std::string component = "dice";    // which process writes: learner, rollout, reward, cluster...
  std::string run_id = "-";          // the run every line belongs to. Default: "-" (none yet)
};

// Sets the process-wide logging options; call once at start-up, before threads.
void log_configure(const LogOptions& options);
const LogOptions& log_options();
bool log_enabled(LogLevel level);

// "debug", "info", "warn", "error"; parse_log_level is its inverse.
const char* log_level_name(LogLevel level);

// Parses "debug", "info", "warn", "error".
bool parse_log_level(const std::string& text, LogLevel* level);

// A key=value field; values with spaces or quotes are quoted and escaped.
struct LogField {
  std::string key;
  std::string value;
};
template <typename T>
LogField kv(std::string key, const T& value) {
  std::ostringstream out;
  out << value;
  return {std::move(key), out.str()};
}

// One log line; written atomically (one write call) when destroyed.
class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;

  LogLine& operator<<(const LogField& field);
  template <typename T>
  LogLine& operator<<(const T& value) {
    message_ << value;
    return *this;
  }

 private:
  LogLevel level_;
  const char* file_;
  int line_;
  std::ostringstream message_;
  std::string fields_;
};

// Quotes a logfmt value when it needs it.
std::string logfmt_quote(const std::string& value);

}  // namespace dice

#define DICE_LOG(severity)                                   \
  if (!::dice::log_enabled(::dice::LogLevel::k##severity)) { \
  } else                                                     \
    ::dice::LogLine(::dice::LogLevel::k##severity, __FILE__, __LINE__)
