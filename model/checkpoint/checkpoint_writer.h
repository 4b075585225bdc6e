// Writing Hugging Face model directories that `transformers` (from_pretrained) can load.
//
// Layout written (see checkpoint.h for the reader):
//   config.json                      model_config_to_json(config)
//   model.safetensors                when all tensors fit in one shard, else
//   model-0000K-of-0000N.safetensors + model.safetensors.index.json
//
// Each safetensors file is:  [u64 LE header length][JSON header, space-padded to 8 bytes][data]
// with tensors laid end to end in the order given, and __metadata__ {"format": "pt"} (transformers
// refuses files without it). Each file is written durably (common/durable_file.h: a temporary,
// fsync, rename into place, fsync of the folder), so a crash or a power loss never leaves a
// half-written file under the final name.
//
// A full disk: before each file (each shard, config.json, the index), its folder's file system
// must have room for the bytes it is about to write plus CheckpointWriterOptions::min_free_bytes,
// or the write is refused before its temporary is made, with an IOError naming the folder, the
// bytes needed and the bytes free (common/disk_space.h); the shards written before stay.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/durable_file.h"
#include "common/status.h"
#include "model/checkpoint/model_config.h"
#include "model/checkpoint/safetensors.h"

namespace dice {

// A tensor to write: row-major bytes owned by the caller, alive until the write returns.
struct TensorView {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;  // must equal prod(shape) * dtype_size(dtype)
};

struct CheckpointWriterOptions {
  // Largest data size of one safetensors file before the tensors are split into shards; a tensor
  // larger than this gets a shard of its own. Default: 5 GB (transformers' default).
  uint64_t max_shard_bytes = 5'000'000'000ULL;
  // Bytes each file must leave free on its disk besides its own (run.min_free_disk_mb for the
  // learner's checkpoints). Default: 0 (each file's own size is still checked)
  uint64_t min_free_bytes = 0;
  // Where the files' system calls and the free-space check's statvfs go (a test sets what it
  // sees). Default: posix_file_system()
  FileSystem* file_system = nullptr;
};

// Writes one safetensors file; `metadata` goes into __metadata__ ("format": "pt" is added).
// `options`: the free-space check's and the file system's (max_shard_bytes is not used).
Status write_safetensors(const std::string& path, const std::vector<TensorView>& tensors,
                         const std::map<std::string, std::string>& metadata = {},
                         const CheckpointWriterOptions& options = {});

// Writes config.json and the weights into `dir` (created if missing).
Status write_model_dir(const std::string& dir, const ModelConfig& config,
                       const std::vector<TensorView>& tensors,
                       const CheckpointWriterOptions& options = {});

}  // namespace dice
