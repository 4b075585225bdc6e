// Whole files for dice-data's commands: read one, or write one so that a reader never sees it
// half written.
#pragma once

#include <string>

#include "common/status.h"

namespace dice::data {

// The bytes of `path`. NotFound or IOError naming the path.
Result<std::string> read_file(const std::string& path);

// Writes `text` to `path` + ".tmp" and renames it into place, replacing any file there.
// IOError naming the path on failure (the temporary file is removed).
Status write_file_atomically(const std::string& path, const std::string& text);

}  // namespace dice::data
