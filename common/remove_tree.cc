#include "common/remove_tree.h"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dice {
namespace {

thread_local std::string failed_path;
thread_local int failed_errno = 0;

int remove_entry(const char* path, const struct stat*, int type, struct FTW*) {
  const int rc = type == FTW_DP ? rmdir(path) : unlink(path);
  if (rc != 0 && errno != ENOENT) {
    failed_path = path;
    failed_errno = errno;
    return 1;  // stop the walk
  }
  return 0;
}

}  // namespace

Status remove_tree(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::ok_status();
    return Status::io_error("cannot stat " + path + ": " + std::strerror(errno));
  }
  failed_path.clear();
  // Depth first (children before their folder), no symlink following, no crossing mounts.
  if (nftw(path.c_str(), remove_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0) {
    if (failed_path.empty())
      return Status::io_error("cannot walk " + path + ": " + std::strerror(errno));
    return Status::io_error("cannot remove " + failed_path + ": " + std::strerror(failed_errno));
  }
  return Status::ok_status();
}

}  // namespace dice
