// Reads back one line that common/log.h wrote: `key=value` pairs separated by spaces, a value in
// double quotes when it holds a space, quote, '=', backslash or control character (with \" \\ \n
// \t \r escaped inside), the inverse of logfmt_quote. `dice-cluster wait`'s human view reads the
// learner's log with it (cluster/run_view.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/log.h"

namespace dice::cluster {

// One parsed log line: its fields in the order written.
struct LogfmtLine {
  std::vector<LogField> fields;

  // The value of the first field named `key`; "" when the line has none.
  const std::string& get(const std::string& key) const;
  bool has(const std::string& key) const;
};

// The fields of `line` (a trailing newline is ignored); nullopt when it is not logfmt: a word
// without '=', an empty key, or an unterminated quoted value (output a service printed by other
// means, such as a library's warning or a crash message).
std::optional<LogfmtLine> parse_logfmt(const std::string& line);

}  // namespace dice::cluster
