// remove_tree(path): deletes a file or a directory tree, like std::filesystem::remove_all.
//
// Why not std::filesystem::remove_all: PyTorch's LibTorch 2.x wheels export their own copy of
// std::filesystem::remove_all from libtorch.so, and in a process that loads libtorch.so the
// dynamic linker binds our calls to it; on the H200 node (torch 2.11) that copy jumped to address
// 0 (seen as a SIGSEGV in every WeightsTest teardown). Code that may share a process with LibTorch
// uses this instead. Symlinks are removed, never followed.
#pragma once

#include <string>

#include "common/status.h"

namespace dice {

// OK when `path` is gone afterwards (also when it never existed); IOError naming the entry that
// could not be removed otherwise.
Status remove_tree(const std::string& path);

}  // namespace dice
