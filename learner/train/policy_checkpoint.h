// Writing a policy checkpoint the rest of the system can read: config.json + safetensors (the
// model's dtype) plus the initial policy's tokenizer and generation files, so every checkpoint
// opens in Hugging Face transformers on its own. Written under `dir`.partial, synced whole, renamed
// and the rename synced (common/durable_file.h), so a rollout worker loading `dir` never sees half
// a checkpoint, and after a power loss a checkpoint the resume folder names is there, whole.
//
// Before the first byte, the file system must have room for the checkpoint (its weights and side
// files) plus `min_free_bytes` (run.min_free_disk_mb), or the write is refused with an IOError
// naming the folder, the bytes needed and the bytes free (common/disk_space.h); a write that
// fails later (a disk that filled meanwhile) removes `dir`.partial. Either way a checkpoint of
// another name is untouched, and so is `dir` itself.
#pragma once

#include <cstdint>
#include <string>

#include "common/durable_file.h"
#include "common/status.h"
#include "model/qwen3.h"

namespace dice {

// `file_system`: where the syncs, the rename and statvfs go (tests record or set them).
Status save_policy_checkpoint(Qwen3LMImpl& model, const std::string& source_dir,
                              const std::string& dir, std::uint64_t min_free_bytes = 0,
                              FileSystem& file_system = posix_file_system());

}  // namespace dice
