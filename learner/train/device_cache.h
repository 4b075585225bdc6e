// Between the learner's stages (after SFT, after each TraceRL update), LibTorch's CUDA caching
// allocator gives back the blocks no tensor uses, so the GPU memory a learner held at its peak
// becomes free again for the rollout and the reward's candidates that share the GPU (the small
// recipe on one GPU). model/cuda_allocator.h says why this is needed.
#pragma once

#include <string_view>

namespace dice {

// Logs the stage's peak of reserved and allocated bytes on cuda:`device`, releases the cache,
// logs what the learner still holds, and starts the peaks again for the next stage. Nothing (no
// line either) where the build has no CUDA allocator or `device` is not a GPU.
void release_learner_cache(int device, std::string_view stage);

}  // namespace dice
