// SmallTmpfs: a real file system of a few MiB that fills up, for the tests of what a full disk
// does to a write. It is a tmpfs mounted on a fresh folder, so it needs root (or CAP_SYS_ADMIN);
// without, mounted() is false and skip_reason() says why (the test skips with it). Unmounted and
// removed when the test is done.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

namespace dice::testing_util {

class SmallTmpfs {
 public:
  explicit SmallTmpfs(int size_kib) {
    if (geteuid() != 0) {
      skip_reason_ = "mounting a small tmpfs needs root (uid " + std::to_string(geteuid()) + ")";
      return;
    }
    std::string pattern = (std::filesystem::temp_directory_path() / "dice-tmpfs-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      skip_reason_ = "mkdtemp failed for " + pattern;
      return;
    }
    path_ = pattern;
    const std::string data = "size=" + std::to_string(size_kib) + "k,mode=0755";
    if (::mount("tmpfs", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, data.c_str()) != 0) {
      skip_reason_ = "cannot mount a tmpfs on " + path_ + ": " + std::strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~SmallTmpfs() {
    if (mounted_ && ::umount2(path_.c_str(), MNT_DETACH) != 0) {
      ADD_FAILURE() << "cannot unmount " << path_ << ": " << std::strerror(errno);
      return;  // never remove what may still be a mount point's contents elsewhere
    }
    std::error_code ec;
    if (!path_.empty()) std::filesystem::remove(path_, ec);
  }
  SmallTmpfs(const SmallTmpfs&) = delete;
  SmallTmpfs& operator=(const SmallTmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& skip_reason() const { return skip_reason_; }
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  std::string skip_reason_;
  bool mounted_ = false;
};

}  // namespace dice::testing_util
