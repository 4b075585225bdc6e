// KernelBench problems from folders (REFERENCE.md section 4): a checkout's level1/, level2/,
// level3/ (under <checkout>/KernelBench/ or given directly), or any folder of files in that
// format. A problem file is named <n>_<Name>.py (n: its number within the level) and defines, at
// the top level, `class Model`, `def get_inputs` and `def get_init_inputs`; that is checked on
// the text (nothing is run). Problems become end-to-end problems with the id "level<L>/<n>_<Name>"
// (the file's path within the checkout, without .py), in order of n.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "tools/dice-eval/problem.h"

namespace dice::eval {

// InvalidArgument "<where>: not a KernelBench problem: no top-level `def get_inputs`" (every
// missing definition named) when `text` lacks one of the three; also for an empty file.
Status check_kernelbench_source(const std::string& text, const std::string& where);

// The level<N> folders of `dir`, or of `dir`/KernelBench when `dir` has none, as (level, path)
// in level order; empty when neither holds any.
std::vector<std::pair<std::string, std::string>> find_level_folders(const std::string& dir);

// The level of a folder named level<N> ("level2" -> "2"); "" for any other name.
std::string level_of_folder(const std::string& dir);

// Every *.py file of `dir` (not its subfolders; other files are ignored) as a problem of
// `level`. InvalidArgument naming the file for a name that is not <n>_<Name>.py, a number used
// twice, or a file that is not a KernelBench problem; InvalidArgument for a folder without any
// .py file; NotFound/IOError naming the path when it cannot be read.
Result<std::vector<Problem>> read_kernelbench_folder(const std::string& dir,
                                                     const std::string& level);

}  // namespace dice::eval
