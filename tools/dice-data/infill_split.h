// DICE's phase-1 infilling split of a KernelBench candidate (a Python file whose CUDA source
// string load_inline compiles, and class ModelNew): prefix / middle (the core the model writes)
// / suffix, with prefix + middle + suffix equal to the file byte for byte.
//
// The rule, read off the 60 published items of data/dice-rl/kernel_infilling_dev.json (all 60
// follow it, and dice-data curriculum writes its infill items the same way):
//
//   import torch                                    -+
//   ...                                              | prefix: every byte before the middle
//   # Custom CUDA kernel for GLU                    -+  (imports, blank lines, comments)
//   source = """                                    -+
//   __global__ void glu_kernel(...) { ... }          | middle: the top-level assignment of the
//   torch::Tensor glu_cuda(...) { ... }              |  string load_inline takes as cuda_sources,
//   """                                             -+  from the first byte of its line to its
//                                                   -+  closing quotes
//   cpp_src = """ ... """                            | suffix: every byte after: the newline
//   ext = load_inline(..., cuda_sources=source, ...) |  ending the assignment's line, the cpp
//   class ModelNew(nn.Module): ...                  -+  declarations, load_inline, ModelNew
//
// The CUDA source is found through load_inline, not by looking for "__global__" in strings, so
// that a docstring or a cpp_sources string quoting a kernel never passes for it: the one
// load_inline(...) call, its cuda_sources argument (keyword, or the third positional one), a
// variable (or a list of one variable), and the one assignment of that variable at the top
// level (not indented) before the call, whose value is string literals only.
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"

namespace dice::data {

struct InfillSplit {
  std::string prefix;
  std::string middle;
  std::string suffix;
  std::string variable;  // the variable the middle assigns ("source")
  int first_line = 0;    // the middle's first and last lines in the file, 1-based
  int last_line = 0;
};

// The split of `candidate`, the text of the file `where` names in messages (a path, or "items.json:
// item 3 (id 6995) cuda_code"). InvalidArgument "<where>:<line>: why" (no line where none
// applies) for a file without that shape: empty, not UTF-8, an unterminated string or bracket,
// no load_inline(...) call or several, no cuda_sources, a cuda_sources that is not one variable
// (a string written inside the call, a list of several, an expression), no top-level string
// assignment of it before the call or several, no class ModelNew after it. The source need not
// hold a __global__ kernel: one published item (id 6936) calls cuDNN from host code only.
Result<InfillSplit> split_infill(std::string_view candidate, const std::string& where);

}  // namespace dice::data
