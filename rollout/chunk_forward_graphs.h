// ChunkForwardGraphs: the sampler's denoising forward (Qwen3LM::hidden_chunk over a padded
// chunk layout) replayed from CUDA graphs.
//
// Why: a decode forward is a few thousand small kernels (36 layers x ~70 ops for SDAR-4B), and
// launching them one by one from the host costs more than running them at every batch size the
// rollout uses (H200: ~16-22 ms a forward at batch 1 against a weight-read floor of ~1.7 ms;
// docs/BENCHMARKS.md). A graph replays all of them with one launch.
//
// A graph is captured per input shape, the first time the shape is seen:
//   rows = the KV cache's rows (fixed), T = the chunk length (block, or 2 blocks in a commit
//   step), S = the key slots attention reads (the layout rounds them up to a multiple, so the
//   cache's growth maps onto a few shapes: Qwen3LM::chunk_layout's key_slots_multiple).
// Each replay first copies the step's tokens, positions, cache slots and mask into the graph's
// input buffers; the KV cache and the weights are read and written where they are (weights
// updated with copy_, as every weight update here does, need no recapture). The returned hidden
// states are the graph's output buffer: read them before the next run().
//
// Graphs share one memory pool and are replayed one at a time on the caller's stream. Capture
// runs on a side stream after one eager warm-up forward there (lazy cuBLAS and attention set-up
// must not happen inside a capture); the warm-up writes the same keys/values the replay writes.
//
// Available only where LibTorch has CUDA (DICE_WITH_CUDA_GRAPHS, set by rollout/CMakeLists.txt);
// elsewhere supported() is false and the sampler runs eager.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "model/kv_cache.h"
#include "model/qwen3.h"

namespace dice {

class ChunkForwardGraphs {
 public:
  // Whether this build can capture CUDA graphs and `device` is a CUDA device.
  static bool supported(c10::Device device);

  // Graphs of `model`'s chunk forward against `cache` (both must outlive this object).
  ChunkForwardGraphs(Qwen3LM model, KvCache& cache);
  ~ChunkForwardGraphs();
  ChunkForwardGraphs(const ChunkForwardGraphs&) = delete;
  ChunkForwardGraphs& operator=(const ChunkForwardGraphs&) = delete;

  // model->hidden_chunk(input_ids, layout, cache): input_ids [rows, T], a padded layout (no
  // grid_index). Captures a graph for a new (T, key_slots), then replays it. Throws c10::Error
  // like the eager forward.
  at::Tensor run(const at::Tensor& input_ids, const CachedChunkLayout& layout);

  int64_t graphs() const { return static_cast<int64_t>(graphs_.size()); }
  int64_t replays() const { return replays_; }
  double capture_seconds() const { return capture_seconds_; }

 private:
  struct Graph;
  Graph& capture(const at::Tensor& input_ids, const CachedChunkLayout& layout);

  Qwen3LM model_;
  KvCache& cache_;
  std::map<std::pair<int64_t, int64_t>, std::unique_ptr<Graph>> graphs_;  // (T, key_slots)
  int64_t replays_ = 0;
  double capture_seconds_ = 0;
  struct Capture;                     // the side stream and the shared pool
  std::unique_ptr<Capture> capture_;  // created with the first graph
};

}  // namespace dice
