// Reading a whole file into memory: the counterpart of write_file_atomically
// (common/durable_file.h) for the tools and readers that take a file as text (task files,
// problem sets, item files), with errors that name the path.
#pragma once

#include <string>

#include "common/status.h"

namespace dice {

// The bytes of `path`. NotFound naming the path when nothing is there; IOError naming it for a
// folder, a file that cannot be opened or a failed read (with strerror).
Result<std::string> read_file(const std::string& path);

}  // namespace dice
