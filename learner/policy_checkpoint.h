// Writing a policy checkpoint the rest of the system can read: config.json + safetensors (the
// model's dtype) plus the initial policy's tokenizer and generation files, so every checkpoint
// opens in Hugging Face transformers on its own. Written under `dir`.partial and renamed, so a
// rollout worker loading `dir` never sees half a checkpoint.
#pragma once

#include <string>

#include "common/status.h"
#include "model/qwen3.h"

namespace dice {

Status save_policy_checkpoint(Qwen3LMImpl& model, const std::string& source_dir,
                              const std::string& dir);

}  // namespace dice
