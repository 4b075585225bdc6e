// Whole files for dice-data's commands: read one, or write one so that a reader never sees it
// half written and a crash never loses it.
#pragma once

#include <string>

#include "common/durable_file.h"
#include "common/status.h"

namespace dice::data {

// The bytes of `path`. NotFound or IOError naming the path.
Result<std::string> read_file(const std::string& path);

// Writes a file durably, replacing any file there (common/durable_file.h): the one helper every
// part of dice uses.
using ::dice::write_file_atomically;

}  // namespace dice::data
