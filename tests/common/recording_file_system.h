// RecordingFileSystem: the real file system (common/durable_file.h's FileSystem), with every call
// written down in order, for the tests that check the order of durable writes.
//   "create <path> <mode>"  open with O_CREAT      "open <path>"   any other open
//   "write <path>"          (consecutive writes of one file: once)
//   "fsync <path>", "fchmod <path> <mode>", "close <path>", "rename <from> <to>", "unlink <path>"
#pragma once

#include <fcntl.h>

#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/durable_file.h"

namespace dice::testing_util {

class RecordingFileSystem : public FileSystem {
 public:
  int open(const std::string& path, int flags, mode_t mode) override {
    const int fd = FileSystem::open(path, flags, mode);
    if (fd >= 0) paths_[fd] = path;
    note((flags & O_CREAT) ? "create " + path + " " + octal(mode) : "open " + path);
    return fd;
  }
  ssize_t write(int fd, const void* data, size_t size) override {
    const std::string call = "write " + paths_[fd];
    if (calls.empty() || calls.back() != call) note(call);
    return FileSystem::write(fd, data, size);
  }
  int fsync(int fd) override {
    note("fsync " + paths_[fd]);
    return FileSystem::fsync(fd);
  }
  int fchmod(int fd, mode_t mode) override {
    note("fchmod " + paths_[fd] + " " + octal(mode));
    return FileSystem::fchmod(fd, mode);
  }
  int close(int fd) override {
    note("close " + paths_[fd]);
    paths_.erase(fd);
    return FileSystem::close(fd);
  }
  int rename(const std::string& from, const std::string& to) override {
    note("rename " + from + " " + to);
    return FileSystem::rename(from, to);
  }
  int unlink(const std::string& path) override {
    note("unlink " + path);
    return FileSystem::unlink(path);
  }

  // The paths fsynced, in order.
  std::vector<std::string> synced() const {
    std::vector<std::string> out;
    for (const std::string& call : calls) {
      if (call.rfind("fsync ", 0) == 0) out.push_back(call.substr(6));
    }
    return out;
  }

  std::vector<std::string> calls;
  // Called with each call before it is made: a test looks at the disk as it is then.
  std::function<void(const std::string& call)> before_call;

 private:
  void note(const std::string& call) {
    if (before_call) before_call(call);
    calls.push_back(call);
  }
  static std::string octal(mode_t mode) {
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
    return text;
  }

  std::map<int, std::string> paths_;
};

}  // namespace dice::testing_util
