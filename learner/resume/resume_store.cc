#include "learner/resume/resume_store.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/disk_space.h"
#include "common/durable_file.h"
#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

constexpr const char kPositionFile[] = "position.json";

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::io_error("cannot write " + path + ": " + std::strerror(errno));
  return Status::ok_status();
}

Status rename_path(const std::string& from, const std::string& to, FileSystem& file_system) {
  if (file_system.rename(from, to) != 0) {
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

// Fills `tmp` (`fill`'s files, then the position) and syncs all of it.
Status write_partial(const std::string& tmp, const RunPosition& position,
                     const std::function<Status(const std::string& dir)>& fill,
                     FileSystem& file_system) {
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) return Status::io_error("cannot create " + tmp + ": " + ec.message());
  if (fill) DICE_RETURN_IF_ERROR(fill(tmp));
  // No reader looks into resume.partial, so its files need no write-and-rename of their own;
  // the weights and optimizer state come from writers that do not sync (LibTorch's archives):
  // everything in the folder reaches the disk, in one pass, before the folder may count.
  DICE_RETURN_IF_ERROR(write_text(tmp + "/" + kPositionFile, run_position_to_json(position)));
  return sync_tree(tmp, file_system);
}

}  // namespace

Status write_resume(const std::string& base_dir, const RunPosition& position,
                    const std::function<Status(const std::string& dir)>& fill,
                    std::uint64_t min_free_bytes, FileSystem& file_system) {
  const std::string tmp = base_dir + "/resume.partial";
  const std::string current = base_dir + "/resume";
  const std::string old = base_dir + "/resume.old";
  DICE_RETURN_IF_ERROR(remove_tree(tmp));
  // The new folder holds what the current one does (the same model and optimizer): about as
  // many bytes. The first one is checked by its writers alone (the policy checkpoint's check).
  DICE_RETURN_IF_ERROR(check_free_disk_space(tmp, tree_bytes(current), "the resume folder",
                                             {min_free_bytes, &file_system}));
  Status written = write_partial(tmp, position, fill, file_system);
  if (!written.ok()) {
    // On a full disk the half-written folder would hold the space the run's other writes need.
    remove_tree(tmp).ignore();
    return written;
  }
  std::error_code ec;
  // resume.old is either gone or the complete folder a crash left between the renames; the
  // current one is complete and durable too, so the older of the two can go.
  if (fs::exists(current, ec)) {
    DICE_RETURN_IF_ERROR(remove_tree(old));
    DICE_RETURN_IF_ERROR(rename_path(current, old, file_system));
  }
  DICE_RETURN_IF_ERROR(rename_path(tmp, current, file_system));
  // Until the renames are on the disk, a power loss may bring back the folder as it was before
  // them: resume.old stays until then.
  DICE_RETURN_IF_ERROR(sync_directory(base_dir, file_system));
  // Its removal need not reach the disk: read_resume() takes resume first.
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
