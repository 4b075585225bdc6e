#include "common/read_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

namespace dice {

Result<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::not_found(path + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    return Status::io_error(path + ": is a directory, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::io_error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::io_error(path + ": read failed: " + std::strerror(errno));
  return text.str();
}

}  // namespace dice
