// Writing a policy checkpoint the rest of the system can read: config.json + safetensors (the
// model's dtype) plus the initial policy's tokenizer and generation files, so every checkpoint
// opens in Hugging Face transformers on its own. Written under `dir`.partial, synced whole, renamed
// and the rename synced (common/durable_file.h), so a rollout worker loading `dir` never sees half
// a checkpoint, and after a power loss a checkpoint the resume folder names is there, whole.
#pragma once

#include <string>

#include "common/durable_file.h"
#include "common/status.h"
#include "model/qwen3.h"

namespace dice {

// `file_system`: where the syncs and the rename go (tests record their order).
Status save_policy_checkpoint(Qwen3LMImpl& model, const std::string& source_dir,
                              const std::string& dir,
                              FileSystem& file_system = posix_file_system());

}  // namespace dice
