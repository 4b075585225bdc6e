// FixedFreeSpaceFileSystem: the real file system (common/durable_file.h's FileSystem), except
// that statvfs reports a free space the test sets, for the tests of the free-space checks
// (common/disk_space.h) without a disk that is really full.
#pragma once

#include <sys/statvfs.h>

#include <cerrno>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/durable_file.h"

namespace dice::testing_util {

// The real file system, except that statvfs reports `free_blocks` blocks of 4096 bytes (a test may
// change it midway), and ENOENT for the paths in `missing`; every path statvfs was asked about is
// kept.
class FixedFreeSpaceFileSystem : public FileSystem {
 public:
  explicit FixedFreeSpaceFileSystem(std::uint64_t blocks) : free_blocks(blocks) {}

  int statvfs(const std::string& path, struct statvfs* out) override {
    asked.push_back(path);
    if (missing.count(path) > 0) {
      errno = ENOENT;
      return -1;
    }
    *out = {};
    out->f_frsize = 4096;
    out->f_bsize = 4096;
    out->f_bavail = free_blocks;
    out->f_bfree = free_blocks;
    return 0;
  }
  int open(const std::string& path, int flags, mode_t mode) override {
    opened.push_back(path);
    return FileSystem::open(path, flags, mode);
  }

  std::uint64_t free_blocks;
  std::set<std::string> missing;
  std::vector<std::string> asked;
  std::vector<std::string> opened;
};

}  // namespace dice::testing_util
