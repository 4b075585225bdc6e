// Free disk space, checked before a large write.
//
// A full disk met midway through a write leaves a short temporary and an ENOSPC deep in a writer
// (or, for RocksDB, a database that turns read-only). Checked first, the write is refused before
// its first byte with an error naming the folder, the bytes it needs and the bytes free, and the
// floor (run.min_free_disk_mb) stays free for the writers that cannot say in advance what they
// write: the reward log, the services' logs.
//
// The check reads statvfs through a FileSystem (common/durable_file.h), so a test can set what it
// sees.
#pragma once

#include <cstdint>
#include <string>

#include "common/durable_file.h"
#include "common/status.h"

namespace dice {

inline constexpr std::uint64_t kBytesPerMiB = std::uint64_t{1} << 20;

// Where the check applies: the writes of a run pass run.min_free_disk_mb as `min_free_bytes`.
struct FreeSpaceCheck {
  // Bytes the write must leave free after its own. Default: 0 (the write's own size only)
  std::uint64_t min_free_bytes = 0;
  // Where statvfs goes. Default: posix_file_system()
  FileSystem* file_system = nullptr;
  // What sets min_free_bytes, for the error. Default: "run.min_free_disk_mb"
  const char* floor_name = "run.min_free_disk_mb";
};

// Bytes an unprivileged writer may still use (f_bavail blocks of f_frsize bytes) on the file
// system holding `path`, or, when `path` does not exist yet, its nearest existing parent.
// IOError naming the path when none can be read.
Result<std::uint64_t> free_disk_bytes(const std::string& path,
                                      FileSystem& file_system = posix_file_system());

// OK when `bytes_needed` more bytes under `path` still leave `check.min_free_bytes` free; else an
// IOError such as
//   "runs/ckpt/r1/policy-v3: not enough free disk space for the policy checkpoint: it needs
//    8.0 GiB (8589934592 bytes) and run.min_free_disk_mb keeps 1.0 GiB (1073741824 bytes) free;
//    2.5 GiB (2684354560 bytes) are free"
// (is_disk_space_shortage() recognises it). `what` names the write.
Status check_free_disk_space(const std::string& path, std::uint64_t bytes_needed,
                             const std::string& what, const FreeSpaceCheck& check = {});

// Bytes of the regular files under `dir` (or of the file `dir`), symlinks not followed; 0 when it
// does not exist. What a new version of a folder will need, about.
std::uint64_t tree_bytes(const std::string& dir);

// Whether `status` is check_free_disk_space()'s refusal, or an ENOSPC/EDQUOT a write met.
bool is_disk_space_shortage(const Status& status);

}  // namespace dice
