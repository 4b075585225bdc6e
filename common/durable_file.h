// Writing files that must survive a crash or a power loss: the one way dice does it.
//
//   write_file_atomically(<dir>/<name>):
//     unlink a stale <dir>/<name>.tmp -> create it (O_EXCL, exactly `mode` from the first byte)
//     -> write every byte -> fsync it -> close -> rename over <dir>/<name> -> fsync <dir>
//
// A full disk is checked for before the temporary is made (DurableWriteOptions::min_free_bytes),
// and one met midway (ENOSPC) ends the write like any error: the old file stays.
//
// After OK the file is on the disk under its name, whole. A crash at any point before leaves the
// old file or the new one under the name, never a mix or a short file (rename replaces atomically
// within one file system, hence the temporary in the same folder; the folder's fsync makes the
// rename itself durable). Any error removes the temporary and names the path, the step and errno.
//
// The calls go through a FileSystem, so a test can see their order (tests/common).
#pragma once

#include <sys/statvfs.h>
#include <sys/types.h>

#include <cstdint>

#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace dice {

// The system calls a durable write makes. Each returns as its POSIX namesake does (-1 with errno
// set on failure). posix_file_system() makes them; a test may wrap it to record the order.
class FileSystem {
 public:
  virtual ~FileSystem() = default;
  virtual int open(const std::string& path, int flags, mode_t mode);
  virtual ssize_t write(int fd, const void* data, size_t size);
  virtual int fsync(int fd);
  virtual int fchmod(int fd, mode_t mode);
  virtual int close(int fd);
  virtual int rename(const std::string& from, const std::string& to);
  virtual int unlink(const std::string& path);
  // The free space check's (common/disk_space.h).
  virtual int statvfs(const std::string& path, struct statvfs* out);
};

FileSystem& posix_file_system();

struct DurableWriteOptions {
  // The file's permission bits, exactly (not narrowed by the umask). Default: 0644
  mode_t mode = 0644;
  // Where the calls go. Default: posix_file_system()
  FileSystem* file_system = nullptr;
  // Before the temporary is made, the folder's file system must have room for the file (its
  // size: the contents, or expected_bytes for write_file_atomically_with) plus these bytes, or
  // the write is refused (common/disk_space.h) and the file left as it was. Default: 0
  std::uint64_t min_free_bytes = 0;
  // write_file_atomically_with's file size for that check, when known. Default: 0
  std::uint64_t expected_bytes = 0;
  // What sets min_free_bytes, for the error. Default: "run.min_free_disk_mb"
  const char* min_free_name = "run.min_free_disk_mb";
};

// Writes `contents` to `path` as described above.
Status write_file_atomically(const std::string& path, std::string_view contents,
                             const DurableWriteOptions& options = {});

// The same, with the bytes written by `write_body` into the temporary's descriptor (write_all()
// does it); an error from it ends the write (the temporary is removed, `path` untouched).
Status write_file_atomically_with(const std::string& path,
                                  const std::function<Status(int fd)>& write_body,
                                  const DurableWriteOptions& options = {});

// Writes all `size` bytes at `data` to `fd`, through short writes and EINTR; `what` names the file
// in errors.
Status write_all(int fd, const void* data, size_t size, const std::string& what,
                 FileSystem& file_system = posix_file_system());

// fsync of a folder: the entries made, renamed or removed in it reach the disk.
Status sync_directory(const std::string& dir, FileSystem& file_system = posix_file_system());

// Makes `dir` and every missing folder above it, each one's entry synced in its parent (the
// parent's fsync, after the folder is made): a folder a later durable write relies on, such as a
// run's checkpoint folder, is itself on the disk. Folders that exist are left as they are.
Status create_directories_durably(const std::string& dir,
                                  FileSystem& file_system = posix_file_system());

// fsync of every file and folder under `dir` and of `dir` itself, children first: a folder filled
// by writers that do not sync (LibTorch's archives) is on the disk afterwards. Symlinks are not
// followed.
Status sync_tree(const std::string& dir, FileSystem& file_system = posix_file_system());

}  // namespace dice
