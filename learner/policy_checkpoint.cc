#include "learner/policy_checkpoint.h"

#include <cstdio>
#include <filesystem>

#include "common/remove_tree.h"
#include "model/weights.h"

namespace dice {
namespace {

// Files of a Hugging Face model folder that are not weights; copied so that every checkpoint
// opens in transformers on its own.
constexpr const char* kSideFiles[] = {
    "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.json",
    "merges.txt",     "added_tokens.json",     "generation_config.json",  "chat_template.jinja"};

}  // namespace

Status save_policy_checkpoint(Qwen3LMImpl& model, const std::string& source_dir,
                              const std::string& dir) {
  namespace fs = std::filesystem;
  const std::string tmp = dir + ".partial";
  DICE_RETURN_IF_ERROR(remove_tree(tmp));
  DICE_RETURN_IF_ERROR(save_qwen3_lm(model, tmp));
  for (const char* name : kSideFiles) {
    std::error_code ec;
    const fs::path from = fs::path(source_dir) / name;
    if (!fs::exists(from, ec)) continue;
    fs::copy_file(from, fs::path(tmp) / name, fs::copy_options::overwrite_existing, ec);
    if (ec) return Status::io_error("copy " + from.string() + " into " + tmp + ": " + ec.message());
  }
  DICE_RETURN_IF_ERROR(remove_tree(dir));  // a checkpoint of the same name from an earlier try
  if (std::rename(tmp.c_str(), dir.c_str()) != 0) {
    return Status::io_error("rename " + tmp + " to " + dir);
  }
  return Status::ok_status();
}

}  // namespace dice
