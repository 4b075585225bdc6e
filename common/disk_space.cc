#include "common/disk_space.h"

#include <ftw.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace dice {
namespace {

constexpr char kShortage[] = "not enough free disk space";

// "8.0 GiB (8589934592 bytes)", "512.0 MiB (536870912 bytes)", "4096 bytes".
std::string describe_bytes(std::uint64_t bytes) {
  const std::string exact = std::to_string(bytes) + " bytes";
  const char* unit = bytes >= (kBytesPerMiB << 10) ? "GiB" : bytes >= kBytesPerMiB ? "MiB" : "";
  if (*unit == '\0') return exact;
  const double scale = static_cast<double>(*unit == 'G' ? kBytesPerMiB << 10 : kBytesPerMiB);
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", static_cast<double>(bytes) / scale, unit);
  return std::string(text) + " (" + exact + ")";
}

// tree_bytes()'s sum over nftw's walk (std::filesystem's is avoided for remove_tree.h's reason).
thread_local std::uint64_t walked_bytes = 0;

int add_file_bytes(const char*, const struct stat* info, int type, struct FTW*) {
  if (type == FTW_F && S_ISREG(info->st_mode))
    walked_bytes += static_cast<std::uint64_t>(info->st_size);
  return 0;
}

}  // namespace

Result<std::uint64_t> free_disk_bytes(const std::string& path, FileSystem& file_system) {
  namespace fs = std::filesystem;
  // A checkpoint's folder does not exist before its write: its parent's file system is the one
  // it will be on.
  fs::path at = path.empty() ? fs::path(".") : fs::path(path);
  struct statvfs info {};
  while (file_system.statvfs(at.string(), &info) != 0) {
    const int err = errno;
    fs::path parent = at.parent_path();
    if (parent.empty()) parent = ".";
    if ((err != ENOENT && err != ENOTDIR) || parent == at) {
      return Status::io_error(path + ": cannot read the free disk space (statvfs " + at.string() +
                              "): " + std::strerror(err));
    }
    at = parent;
  }
  return static_cast<std::uint64_t>(info.f_bavail) * static_cast<std::uint64_t>(info.f_frsize);
}

Status check_free_disk_space(const std::string& path, std::uint64_t bytes_needed,
                             const std::string& what, const FreeSpaceCheck& check) {
  FileSystem& file_system = check.file_system ? *check.file_system : posix_file_system();
  DICE_ASSIGN_OR_RETURN(const std::uint64_t free_bytes, free_disk_bytes(path, file_system));
  if (free_bytes >= bytes_needed && free_bytes - bytes_needed >= check.min_free_bytes) {
    return Status::ok_status();
  }
  std::string message = path + ": " + kShortage + " for " + what + ": ";
  if (bytes_needed > 0) message += "it needs " + describe_bytes(bytes_needed);
  if (bytes_needed > 0 && check.min_free_bytes > 0) message += " and ";
  if (check.min_free_bytes > 0) {
    message +=
        std::string(check.floor_name) + " keeps " + describe_bytes(check.min_free_bytes) + " free";
  }
  return Status::io_error(message + "; " + describe_bytes(free_bytes) + " are free");
}

std::uint64_t tree_bytes(const std::string& dir) {
  walked_bytes = 0;
  if (nftw(dir.c_str(), add_file_bytes, 32, FTW_PHYS) != 0) walked_bytes = 0;
  return walked_bytes;
}

bool is_disk_space_shortage(const Status& status) {
  const std::string& message = status.message();
  return !status.ok() && (message.find(kShortage) != std::string::npos ||
                          message.find(std::strerror(ENOSPC)) != std::string::npos ||
                          message.find(std::strerror(EDQUOT)) != std::string::npos);
}

}  // namespace dice
