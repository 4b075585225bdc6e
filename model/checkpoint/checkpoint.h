// Checkpoint: a Hugging Face model directory opened for reading.
//
//   <dir>/config.json                      ModelConfig (Qwen3 fields + block_size, mask_token_id)
//   <dir>/model.safetensors                one file holding every tensor, or
//   <dir>/model.safetensors.index.json     {"metadata": {...}, "weight_map": {tensor: shard}}
//   <dir>/model-00001-of-0000N.safetensors  the shards the index names
//
// Every file is memory-mapped and validated on open; the index must agree with the shards (each
// listed tensor is in the shard it names, and no shard holds a tensor the index omits).
// Tensor data points into the maps and stays valid while the Checkpoint lives.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/checkpoint/model_config.h"
#include "model/checkpoint/safetensors.h"

namespace dice {

class Checkpoint {
 public:
  static Result<Checkpoint> open(const std::string& dir);

  const std::string& dir() const { return dir_; }
  const ModelConfig& config() const { return config_; }
  // Every tensor, keyed by name.
  const std::map<std::string, const TensorInfo*>& tensors() const { return tensors_; }
  // nullptr when there is no tensor of that name.
  const TensorInfo* find(const std::string& name) const;
  // The file a tensor came from, for error messages.
  std::string file_of(const std::string& name) const;

 private:
  std::string dir_;
  ModelConfig config_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;  // owns the maps tensors_ points into
  std::map<std::string, const TensorInfo*> tensors_;
  std::map<std::string, std::string> file_of_;
};

}  // namespace dice
