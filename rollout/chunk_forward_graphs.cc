#include "rollout/chunk_forward_graphs.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#if DICE_WITH_CUDA_GRAPHS
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <chrono>
#include <utility>

namespace dice {

#if DICE_WITH_CUDA_GRAPHS

struct ChunkForwardGraphs::Graph {
  // Input buffers: the graph reads these addresses on every replay.
  at::Tensor input_ids, positions, write_rows, mask;
  at::Tensor hidden;         // output buffer
  CachedChunkLayout layout;  // the layout over the input buffers
  at::cuda::CUDAGraph graph;
};

struct ChunkForwardGraphs::Capture {
  c10::cuda::CUDAStream side;
  decltype(at::cuda::graph_pool_handle()) pool;  // MempoolId_t moved namespaces across 2.x
};

bool ChunkForwardGraphs::supported(c10::Device device) {
  return device.is_cuda();
}

#else  // LibTorch without CUDA: nothing to capture; supported() keeps the sampler eager.

struct ChunkForwardGraphs::Graph {};
struct ChunkForwardGraphs::Capture {};

bool ChunkForwardGraphs::supported(c10::Device) {
  return false;
}

#endif

ChunkForwardGraphs::ChunkForwardGraphs(Qwen3LM model, KvCache& cache)
    : model_(std::move(model)), cache_(cache) {}

ChunkForwardGraphs::~ChunkForwardGraphs() = default;

at::Tensor ChunkForwardGraphs::run(const at::Tensor& input_ids, const CachedChunkLayout& layout) {
  TORCH_CHECK(!layout.grid_index.defined(), "ChunkForwardGraphs: a packed layout has no graph");
  TORCH_CHECK(input_ids.dim() == 2 && input_ids.size(0) == layout.rows &&
                  input_ids.size(1) == layout.chunk_len,
              "ChunkForwardGraphs: input_ids ", input_ids.sizes(), " do not fit the layout (",
              layout.rows, " rows x ", layout.chunk_len, ")");
#if DICE_WITH_CUDA_GRAPHS
  auto it = graphs_.find({layout.chunk_len, layout.key_slots});
  Graph& g = it != graphs_.end() ? *it->second : capture(input_ids, layout);
  g.input_ids.copy_(input_ids, /*non_blocking=*/true);
  g.positions.copy_(layout.positions, true);
  g.write_rows.copy_(layout.write_rows, true);
  g.mask.copy_(layout.mask, true);
  g.graph.replay();
  ++replays_;
  return g.hidden;
#else
  TORCH_CHECK(false, "ChunkForwardGraphs: this build's LibTorch has no CUDA");
#endif
}

#if DICE_WITH_CUDA_GRAPHS  // only run() calls it, and only in such a build
ChunkForwardGraphs::Graph& ChunkForwardGraphs::capture(const at::Tensor& input_ids,
                                                       const CachedChunkLayout& layout) {
  const auto start = std::chrono::steady_clock::now();
  auto g = std::make_unique<Graph>();
  g->input_ids = input_ids.clone();
  g->positions = layout.positions.clone();
  g->write_rows = layout.write_rows.clone();
  g->mask = layout.mask.contiguous().clone();
  g->layout = layout;
  g->layout.positions = g->positions;
  g->layout.write_rows = g->write_rows;
  g->layout.mask = g->mask;

  const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream();
  if (!capture_) {
    capture_.reset(new Capture{c10::cuda::getStreamFromPool(), at::cuda::graph_pool_handle()});
  }
  // The side stream starts after everything queued so far (the buffers above, the cache).
  at::cuda::CUDAEvent queued;
  queued.record(caller);
  queued.block(capture_->side);
  {
    c10::cuda::CUDAStreamGuard on_side(capture_->side);
    (void)model_->hidden_chunk(g->input_ids, g->layout, cache_);  // warm-up, eager
    // Thread-local capture: another thread's CUDA calls (a weight receiver's NCCL set-up, say)
    // must neither join nor break this capture.
    g->graph.capture_begin(capture_->pool, cudaStreamCaptureModeThreadLocal);
    g->hidden = model_->hidden_chunk(g->input_ids, g->layout, cache_);
    g->graph.capture_end();
  }
  at::cuda::CUDAEvent captured;
  captured.record(capture_->side);
  captured.block(caller);
  capture_seconds_ +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Graph& out = *g;
  graphs_[{layout.chunk_len, layout.key_slots}] = std::move(g);
  return out;
}
#endif

}  // namespace dice
