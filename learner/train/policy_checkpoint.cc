#include "learner/train/policy_checkpoint.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/disk_space.h"
#include "common/durable_file.h"
#include "common/remove_tree.h"
#include "model/weights.h"

namespace dice {
namespace {

// Files of a Hugging Face model folder that are not weights; copied so that every checkpoint
// opens in transformers on its own.
constexpr const char* kSideFiles[] = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
    "merges.txt",     "added_tokens.json",     "generation_config.json",  "chat_template.jinja"};

// What the checkpoint will take on the disk: the weights as the model holds them (written in its
// dtype) and the side files. The safetensors headers and config.json add a few kB.
std::uint64_t checkpoint_bytes(Qwen3LMImpl& model, const std::string& source_dir) {
  std::uint64_t bytes = 0;
  for (const at::Tensor& p : model.parameters()) bytes += static_cast<std::uint64_t>(p.nbytes());
  for (const char* name : kSideFiles) bytes += tree_bytes(source_dir + "/" + name);
  return bytes;
}

// Writes the checkpoint into `tmp`: the weights, then the side files, then a sync of all of it.
// Each weights file checks its own bytes against the free space again (another writer may have
// taken what the checkpoint's check saw).
Status write_partial(Qwen3LMImpl& model, const std::string& source_dir, const std::string& tmp,
                     std::uint64_t min_free_bytes, FileSystem& file_system) {
  namespace fs = std::filesystem;
  CheckpointWriterOptions writer;
  writer.min_free_bytes = min_free_bytes;
  writer.file_system = &file_system;
  DICE_RETURN_IF_ERROR(save_qwen3_lm(model, tmp, writer));
  for (const char* name : kSideFiles) {
    std::error_code ec;
    const fs::path from = fs::path(source_dir) / name;
    if (!fs::exists(from, ec)) continue;
    fs::copy_file(from, fs::path(tmp) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::io_error("copy " + from.string() + " into " + tmp + ": " + ec.message());
  }
  // The weights' files are synced as they are written; the side files are copies that are not.
  // All of it is on the disk before the folder takes its name, and the name after the rename:
  // the resume folder names this checkpoint.
  return sync_tree(tmp, file_system);
}

}  // namespace

Status save_policy_checkpoint(Qwen3LMImpl& model, const std::string& source_dir,
                              const std::string& dir, std::uint64_t min_free_bytes,
                              FileSystem& file_system) {
  namespace fs = std::filesystem;
  const std::string tmp = dir + ".partial";
  DICE_RETURN_IF_ERROR(remove_tree(tmp));
  DICE_RETURN_IF_ERROR(check_free_disk_space(dir, checkpoint_bytes(model, source_dir),
                                             "the policy checkpoint",
                                             {min_free_bytes, &file_system}));
  Status written = write_partial(model, source_dir, tmp, min_free_bytes, file_system);
  if (!written.ok()) {
    // On a full disk the half-written folder would hold the space the run's other writes need.
    remove_tree(tmp).ignore();
    return written;
  }
  DICE_RETURN_IF_ERROR(remove_tree(dir));  // a checkpoint of the same name from an earlier try
  if (file_system.rename(tmp, dir) != 0) {
    return Status::io_error("rename " + tmp + " to " + dir + ": " + std::strerror(errno));
  }
  const std::string parent = fs::path(dir).parent_path().string();
  return sync_directory(parent.empty() ? "." : parent, file_system);
}

}  // namespace dice
