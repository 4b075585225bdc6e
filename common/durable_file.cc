#include "common/durable_file.h"

#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "common/disk_space.h"

namespace dice {
namespace {

Status os_error(const std::string& what, const std::string& path, int err) {
  return Status::io_error(path + ": " + what + ": " + std::strerror(err));
}

// The folder a path's entry lives in ("." for a bare name).
std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_not_of('/') == std::string::npos
                           ? std::string::npos
                           : path.rfind('/', path.find_last_not_of('/'));
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// sync_tree()'s walk: each regular file and folder, in nftw's order. (std::filesystem's walk is
// avoided for the reason remove_tree.h gives.)
thread_local std::vector<std::pair<std::string, bool>> walked;

int note_entry(const char* path, const struct stat* info, int type, struct FTW*) {
  if (type == FTW_F && S_ISREG(info->st_mode)) walked.emplace_back(path, false);
  if (type == FTW_DP) walked.emplace_back(path, true);
  return 0;
}

// fsync of the file or folder at `path`, opened read-only.
Status sync_path(const std::string& path, bool directory, FileSystem& file_system) {
  const int fd =
      file_system.open(path, O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : O_NOFOLLOW), 0);
  if (fd < 0) return os_error("cannot open to sync", path, errno);
  const bool synced = file_system.fsync(fd) == 0;
  const int err = errno;
  file_system.close(fd);
  if (!synced) return os_error("fsync failed", path, err);
  return Status::ok_status();
}

}  // namespace

int FileSystem::open(const std::string& path, int flags, mode_t mode) {
  return ::open(path.c_str(), flags, mode);
}
ssize_t FileSystem::write(int fd, const void* data, size_t size) {
  return ::write(fd, data, size);
}
int FileSystem::fsync(int fd) {
  return ::fsync(fd);
}
int FileSystem::fchmod(int fd, mode_t mode) {
  return ::fchmod(fd, mode);
}
int FileSystem::close(int fd) {
  return ::close(fd);
}
int FileSystem::rename(const std::string& from, const std::string& to) {
  return ::rename(from.c_str(), to.c_str());
}
int FileSystem::unlink(const std::string& path) {
  return ::unlink(path.c_str());
}
int FileSystem::statvfs(const std::string& path, struct statvfs* out) {
  return ::statvfs(path.c_str(), out);
}

FileSystem& posix_file_system() {
  static FileSystem posix;
  return posix;
}

Status write_all(int fd, const void* data, size_t size, const std::string& what,
                 FileSystem& file_system) {
  const auto* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = file_system.write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return os_error("write failed", what, n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return Status::ok_status();
}

Status write_file_atomically_with(const std::string& path,
                                  const std::function<Status(int fd)>& write_body,
                                  const DurableWriteOptions& options) {
  FileSystem& file_system = options.file_system ? *options.file_system : posix_file_system();
  const std::string tmp = path + ".tmp";
  if (options.expected_bytes > 0 || options.min_free_bytes > 0) {
    DICE_RETURN_IF_ERROR(
        check_free_disk_space(parent_of(path), options.expected_bytes, "the new " + path,
                              {options.min_free_bytes, &file_system, options.min_free_name}));
  }
  // A temporary left by a crash may have another mode; O_EXCL makes a fresh one.
  if (file_system.unlink(tmp) != 0 && errno != ENOENT) {
    return os_error("cannot remove a stale temporary", tmp, errno);
  }
  const int fd = file_system.open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, options.mode);
  if (fd < 0) return os_error("cannot create", tmp, errno);
  auto fail = [&](Status status) {
    file_system.close(fd);
    file_system.unlink(tmp);
    return status;
  };
  // The umask narrowed the mode open() was given; the file gets exactly the one asked for.
  if (file_system.fchmod(fd, options.mode) != 0) return fail(os_error("chmod failed", tmp, errno));
  Status body = write_body(fd);
  if (!body.ok()) return fail(body.with_context(path));
  if (file_system.fsync(fd) != 0) return fail(os_error("fsync failed", tmp, errno));
  if (file_system.close(fd) != 0) {
    const int err = errno;
    file_system.unlink(tmp);
    return os_error("close failed", tmp, err);
  }
  if (file_system.rename(tmp, path) != 0) {
    const int err = errno;
    file_system.unlink(tmp);
    return os_error("cannot rename " + tmp + " into place", path, err);
  }
  return sync_directory(parent_of(path), file_system);
}

Status write_file_atomically(const std::string& path, std::string_view contents,
                             const DurableWriteOptions& options) {
  FileSystem& file_system = options.file_system ? *options.file_system : posix_file_system();
  DurableWriteOptions sized = options;
  sized.expected_bytes = contents.size();
  return write_file_atomically_with(
      path,
      [&](int fd) { return write_all(fd, contents.data(), contents.size(), path, file_system); },
      sized);
}

Status sync_directory(const std::string& dir, FileSystem& file_system) {
  return sync_path(dir, /*directory=*/true, file_system);
}

Status create_directories_durably(const std::string& dir, FileSystem& file_system) {
  namespace fs = std::filesystem;
  // The missing folders, outermost first.
  std::vector<fs::path> missing;
  std::error_code ec;
  for (fs::path at = fs::path(dir).lexically_normal(); !at.empty() && !fs::exists(at, ec);
       at = at.parent_path()) {
    missing.insert(missing.begin(), at);
    if (at == at.parent_path()) break;
  }
  for (const fs::path& folder : missing) {
    if (!fs::create_directory(folder, ec) && ec) {
      return Status::io_error("cannot create " + folder.string() + ": " + ec.message());
    }
    const fs::path parent = folder.parent_path();
    DICE_RETURN_IF_ERROR(sync_directory(parent.empty() ? "." : parent.string(), file_system));
  }
  return Status::ok_status();
}

Status sync_tree(const std::string& dir, FileSystem& file_system) {
  walked.clear();
  // Depth first (children before the folder that names them), no symlink followed.
  if (nftw(dir.c_str(), note_entry, 32, FTW_DEPTH | FTW_PHYS) != 0) {
    return os_error("cannot walk", dir, errno);
  }
  const std::vector<std::pair<std::string, bool>> entries = std::move(walked);
  walked.clear();
  for (const auto& [path, directory] : entries) {
    DICE_RETURN_IF_ERROR(sync_path(path, directory, file_system));
  }
  return Status::ok_status();
}

}  // namespace dice
