// Shared by the model tests: a tiny Qwen3 config and weights large enough that attention
// patterns, norms and RoPE visibly change the logits (the default N(0, 0.02) init would not).
#pragma once

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "model/checkpoint/model_config.h"
#include "model/qwen3.h"
#include "model/weights.h"

namespace dice {
namespace testing_util {

// 4 query heads over 2 key/value heads (GQA), head_dim 16 != hidden / heads = 8 (so head_dim is
// read from the config, not derived), untied lm_head.
inline ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.intermediate_size = 48;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 16;
  c.rms_norm_eps = 1e-6;
  c.rope_theta = 10000.0;
  c.max_position_embeddings = 128;
  c.tie_word_embeddings = false;
  c.block_size = 4;
  c.mask_token_id = 63;
  c.dtype = "float32";
  return c;
}

// Unit-scale random weights: embeddings N(0, 1), linear weights N(0, 1/in), norms 1 + N(0, 0.1).
inline Qwen3LM random_lm(const ModelConfig& config, uint64_t seed) {
  at::manual_seed(seed);
  Qwen3LM lm(config);
  torch::NoGradGuard no_grad;
  for (NamedParameter& p : hf_named_parameters(*lm)) {
    if (p.tensor.dim() == 1) {
      p.tensor.copy_(1.0 + 0.1 * at::randn_like(p.tensor));
    } else if (p.name == "model.embed_tokens.weight") {
      p.tensor.normal_(0.0, 1.0);
    } else {
      p.tensor.normal_(0.0, 1.0 / std::sqrt(static_cast<double>(p.tensor.size(1))));
    }
  }
  return lm;
}

// What can be wrong with a checkpoint that a load must refuse before writing anything.
enum class CheckpointFault {
  kTruncated,      // model.safetensors lost its last bytes (a copy cut short)
  kWrongShape,     // a tensor one row short of what config.json implies
  kWrongDtype,     // a tensor of I32 values
  kMissingTensor,  // a tensor left out
};
inline const char* fault_name(CheckpointFault fault) {
  switch (fault) {
    case CheckpointFault::kTruncated:
      return "truncated";
    case CheckpointFault::kWrongShape:
      return "wrong shape";
    case CheckpointFault::kWrongDtype:
      return "wrong dtype";
    default:
      return "missing tensor";
  }
}
constexpr CheckpointFault kCheckpointFaults[] = {
    CheckpointFault::kTruncated, CheckpointFault::kWrongShape, CheckpointFault::kWrongDtype,
    CheckpointFault::kMissingTensor};

// Writes `lm` (an untied fp32 model on the CPU) to `dir` as save_qwen3_lm() would, with `fault`
// in lm_head.weight: the last tensor in checkpoint order, so a load that checked tensor by tensor
// as it copied would have written every other parameter before finding it.
inline Status write_faulty_checkpoint(Qwen3LMImpl& lm, const std::string& dir,
                                      CheckpointFault fault) {
  std::vector<TensorView> views;
  std::vector<int32_t> ints;
  for (NamedParameter& p : hf_named_parameters(lm)) {
    TensorView view{p.name, DType::kF32,
                    std::vector<int64_t>(p.tensor.sizes().begin(), p.tensor.sizes().end()),
                    p.tensor.data_ptr(), static_cast<size_t>(p.tensor.nbytes())};
    if (p.name != "lm_head.weight") {
      views.push_back(view);
      continue;
    }
    if (fault == CheckpointFault::kMissingTensor) continue;
    if (fault == CheckpointFault::kWrongShape) {
      view.shape[0] -= 1;
      view.nbytes -= static_cast<size_t>(view.shape[1]) * sizeof(float);
    }
    if (fault == CheckpointFault::kWrongDtype) {
      ints.assign(static_cast<size_t>(p.tensor.numel()), 1);
      view.dtype = DType::kI32;
      view.data = ints.data();
    }
    views.push_back(view);
  }
  ModelConfig config = lm.config();
  config.dtype = "float32";
  DICE_RETURN_IF_ERROR(write_model_dir(dir, config, views));
  if (fault == CheckpointFault::kTruncated) {
    const std::string file = dir + "/model.safetensors";
    std::error_code error;
    std::filesystem::resize_file(file, std::filesystem::file_size(file) - 64, error);
    if (error) return Status::io_error(file + ": " + error.message());
  }
  return Status::ok_status();
}

inline at::Tensor random_tokens(int64_t batch, int64_t len, const ModelConfig& config) {
  return at::randint(0, config.vocab_size - 1, {batch, len}, at::kLong);
}

}  // namespace testing_util
}  // namespace dice
