// TempDir: a fresh folder under $TMPDIR for one test, removed with everything in it when the
// test is done. The prefix names the test in the folder's name (left behind only by a crash).
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "common/remove_tree.h"

namespace dice::testing_util {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "dice-test") {
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  // remove_tree: in a test that loads LibTorch 2.x, std::filesystem::remove_all is libtorch.so's
  // copy, which crashes (common/remove_tree.h).
  ~TempDir() { remove_tree(path_).ignore(); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace dice::testing_util
