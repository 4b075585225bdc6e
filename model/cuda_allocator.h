// LibTorch's CUDA caching allocator, as the learner and the benches read and release it.
//
// The caching allocator keeps every block a process ever freed for reuse, so a learner that
// shares its GPU with rollout and reward (the small recipe on one GPU) goes on holding the peak
// of its SFT activations long after SFT ended, and the reward's sandboxed candidates then fail
// with "CUDA out of memory" beside it. The learner releases the cache after SFT and after each
// update and logs the peak it reserved, so a run's memory budget is a figure, not a guess.
//
// Needs LibTorch's CUDA half (c10_cuda: a PyTorch wheel's LibTorch; model/CMakeLists.txt defines
// DICE_HAVE_C10_CUDA when it links it). Without it, and on a machine without a GPU, nothing is
// released and every figure is unknown (`known` false).
#pragma once

#include <cstdint>

namespace dice {

struct CachedDeviceMemory {
  bool known = false;                // false: no CUDA allocator in this build or no GPU
  std::uint64_t allocated = 0;       // bytes handed out to tensors now
  std::uint64_t reserved = 0;        // bytes the allocator holds from the driver now
  std::uint64_t peak_allocated = 0;  // since the process started or the last reset
  std::uint64_t peak_reserved = 0;
};

// Statistics of device `device` (all memory pools together).
CachedDeviceMemory cached_device_memory(int device);

// Starts the peaks of device `device` again from the current figures.
void reset_peak_device_memory(int device);

// Returns every cached block no tensor uses to the driver (all devices this process touched).
// The next allocations pay cudaMalloc again; call it between stages, not inside a step.
void release_cached_device_memory();

}  // namespace dice
