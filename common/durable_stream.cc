#include "common/durable_stream.h"

#include <filesystem>
#include <streambuf>
#include <utility>

#include "common/disk_space.h"

namespace dice {
namespace {

// The temporary's descriptor (<path>.tmp, durable_file.h) as a stream buffer: bytes go out
// through write_all() in blocks, the
// floor is checked after every check_every_bytes, and the first error is kept (the stream then
// fails, and what `write` puts in after it goes nowhere).
class CheckedFileBuffer : public std::streambuf {
 public:
  CheckedFileBuffer(int fd, std::string path, const StreamWriteOptions& options,
                    FileSystem& file_system)
      : fd_(fd), path_(std::move(path)), options_(options), file_system_(file_system) {
    const std::string dir = std::filesystem::path(path_).parent_path().string();
    dir_ = dir.empty() ? "." : dir;
    setp(block_, block_ + sizeof block_);
  }

  const Status& status() const { return status_; }

 protected:
  int_type overflow(int_type ch) override {
    if (!flush_block()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return flush_block() ? 0 : -1; }

 private:
  bool flush_block() {
    if (!status_.ok()) return false;
    const auto size = static_cast<std::size_t>(pptr() - pbase());
    if (size == 0) return true;
    status_ = write_all(fd_, pbase(), size, path_ + ".tmp", file_system_);
    setp(block_, block_ + sizeof block_);
    since_check_ += size;
    if (status_.ok() && options_.file.min_free_bytes > 0 &&
        since_check_ >= options_.check_every_bytes) {
      since_check_ = 0;
      status_ = check_free_disk_space(
          dir_, 0, "the rest of " + path_,
          {options_.file.min_free_bytes, &file_system_, options_.file.min_free_name});
    }
    return status_.ok();
  }

  int fd_;
  std::string path_;
  std::string dir_;
  const StreamWriteOptions& options_;
  FileSystem& file_system_;
  Status status_;
  std::uint64_t since_check_ = 0;
  char block_[64 * 1024];
};

}  // namespace

Status write_stream_atomically(const std::string& path,
                               const std::function<Status(std::ostream& out)>& write,
                               const StreamWriteOptions& options) {
  FileSystem& file_system =
      options.file.file_system ? *options.file.file_system : posix_file_system();
  return write_file_atomically_with(
      path,
      [&](int fd) -> Status {
        CheckedFileBuffer buffer(fd, path, options, file_system);
        std::ostream out(&buffer);
        const Status written = write(out);
        out.flush();
        // The disk's error first: an error `write` saw on the stream follows from it.
        if (!buffer.status().ok()) return buffer.status();
        if (!written.ok()) return written;
        if (!out) return Status::io_error(path + ": write failed");
        return Status::ok_status();
      },
      options.file);
}

}  // namespace dice
