#include "common/read_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dice {

// POSIX calls, not a stream: a read that fails after the open (a /proc file of a process that
// ended in between: ESRCH) is an error here, where a stream's read either throws from its buffer
// (std::istreambuf_iterator) or stops short and looks like the end of the file.
Result<std::string> read_file(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::not_found(path + ": no such file");
    return Status::io_error(path + ": cannot open: " + std::strerror(errno));
  }
  struct stat info {};
  if (fstat(fd, &info) == 0 && S_ISDIR(info.st_mode)) {
    close(fd);
    return Status::io_error(path + ": is a directory, not a file");
  }
  std::string text;
  char buffer[65536];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      const int error = errno;
      close(fd);
      return Status::io_error(path + ": read failed: " + std::strerror(error));
    }
  }
  close(fd);
  return text;
}

}  // namespace dice
