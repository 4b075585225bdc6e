// Reading a whole file into memory: the counterpart of write_file_atomically
// (common/durable_file.h), and the one way dice reads a file it takes as text (configs, task
// files and prompt templates, tokenizer.json, a checkpoint's config and index, problem sets, item
// files), with errors that name the path.
#pragma once

#include <string>

#include "common/status.h"

namespace dice {

// The bytes of `path`. NotFound naming the path when nothing is there; IOError naming it for a
// folder, a file that cannot be opened or a failed read (with strerror).
Result<std::string> read_file(const std::string& path);

}  // namespace dice
