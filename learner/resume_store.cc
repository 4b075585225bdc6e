#include "learner/resume_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

constexpr const char kPositionFile[] = "position.json";

// Writes `text` to `path` and flushes it to the disk: position.json is what makes a folder count.
Status write_synced(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::io_error("cannot create " + path + ": " + std::strerror(errno));
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return Status::io_error("cannot write " + path + ": " + why);
    }
    done += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced) return Status::io_error("cannot flush " + path + ": " + std::strerror(errno));
  return Status::ok_status();
}

Status rename_path(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0) {
    return Status::io_error("rename " + from + " to " + to + ": " + std::strerror(errno));
  }
  return Status::ok_status();
}

Result<ResumePoint> read_folder(const std::string& dir) {
  const std::string path = dir + "/" + kPositionFile;
  std::ifstream in(path);
  if (!in) return Status::not_found(path);
  std::stringstream text;
  text << in.rdbuf();
  DICE_ASSIGN_OR_RETURN(RunPosition position, run_position_from_json(text.str(), path));
  return ResumePoint{dir, std::move(position)};
}

}  // namespace

Status write_resume(const std::string& base_dir, const RunPosition& position,
                    const std::function<Status(const std::string& dir)>& fill) {
  const std::string tmp = base_dir + "/resume.partial";
  const std::string current = base_dir + "/resume";
  const std::string old = base_dir + "/resume.old";
  DICE_RETURN_IF_ERROR(remove_tree(tmp));
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) return Status::io_error("cannot create " + tmp + ": " + ec.message());
  if (fill) DICE_RETURN_IF_ERROR(fill(tmp));
  DICE_RETURN_IF_ERROR(write_synced(tmp + "/" + kPositionFile, run_position_to_json(position)));
  // resume.old is either gone or the complete folder a crash left between the renames; the
  // current one is complete too, so the older of the two can go.
  if (fs::exists(current, ec)) {
    DICE_RETURN_IF_ERROR(remove_tree(old));
    DICE_RETURN_IF_ERROR(rename_path(current, old));
  }
  DICE_RETURN_IF_ERROR(rename_path(tmp, current));
  return remove_tree(old);
}

Result<ResumePoint> read_resume(const std::string& base_dir) {
  for (const char* name : {"resume", "resume.old"}) {
    auto point = read_folder(base_dir + "/" + name);
    if (point.status().code() == StatusCode::kNotFound) continue;
    return point;
  }
  return Status::not_found("no resume folder under " + base_dir);
}

}  // namespace dice
