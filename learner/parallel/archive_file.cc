#include "learner/parallel/archive_file.h"

#include <torch/serialize/output-archive.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace dice {
namespace {

// LibTorch's writer function: writes each piece to `fd` and keeps the first error; after it, only
// counts. Always reports the whole piece written (see archive_file.h).
class ArchiveWriter {
 public:
  ArchiveWriter(int fd, FileSystem& file_system) : fd_(fd), file_system_(file_system) {}

  size_t operator()(const void* data, size_t size) {
    if (error_ == 0) {
      // LibTorch 2.x passes no data for bytes it skips (records written as metadata only).
      static const char kZeros[4096] = {};
      const auto* bytes = static_cast<const char*>(data);
      for (size_t done = 0; done < size && error_ == 0;) {
        const size_t want = data != nullptr ? size - done : std::min(sizeof(kZeros), size - done);
        const ssize_t n = file_system_.write(fd_, data != nullptr ? bytes + done : kZeros, want);
        if (n < 0 && errno == EINTR) continue;
        if (n > 0) {
          done += static_cast<size_t>(n);
        } else {
          error_ = n < 0 ? errno : EIO;
          failed_at_ = bytes_ + done;
        }
      }
    }
    bytes_ += size;
    return size;
  }

  // OK, or what failed: `what` with the archive's size, the offset and errno.
  Status status(const std::string& what) const {
    if (error_ == 0) return Status::ok_status();
    return Status::io_error(what + " of " + std::to_string(bytes_) + " bytes: the write at byte " +
                            std::to_string(failed_at_) + " failed: " + std::strerror(error_));
  }

 private:
  int fd_;
  FileSystem& file_system_;
  int error_ = 0;
  std::uint64_t failed_at_ = 0;  // the file's size when the write failed
  std::uint64_t bytes_ = 0;      // what LibTorch handed over, all of it
};

}  // namespace

Status save_archive_file(torch::serialize::OutputArchive& archive, const std::string& path,
                         const std::string& what, const DurableWriteOptions& options) {
  FileSystem& file_system = options.file_system ? *options.file_system : posix_file_system();
  return write_file_atomically_with(
      path,
      [&](int fd) {
        ArchiveWriter writer(fd, file_system);
        try {
          archive.save_to([&writer](const void* data, size_t size) { return writer(data, size); });
        } catch (const c10::Error& e) {
          return Status::io_error(what + ": " + e.what_without_backtrace());
        }
        return writer.status(what);
      },
      options);
}

}  // namespace dice
