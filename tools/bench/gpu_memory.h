// What the GPU benchmarks read of the CUDA caching allocator on device 0: peak and current bytes
// handed out, through model/cuda_allocator.h; without LibTorch's CUDA half the figures are
// unknown (`known` false).
#pragma once

#include "model/cuda_allocator.h"

namespace dice::bench {

struct GpuMemory {
  bool known = false;
  double peak = 0, current = 0;  // bytes
};

inline void reset_peak_gpu_memory() {
  reset_peak_device_memory(0);
}

inline GpuMemory gpu_memory() {
  const CachedDeviceMemory m = cached_device_memory(0);
  return {m.known, static_cast<double>(m.peak_allocated), static_cast<double>(m.allocated)};
}

}  // namespace dice::bench
