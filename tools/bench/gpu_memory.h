// What the GPU benchmarks read of the CUDA caching allocator on device 0: peak and current bytes
// handed out. Needs c10_cuda (LibTorch with CUDA: the bench's CMakeLists defines
// DICE_HAVE_C10_CUDA=1 when it links it); without it the figures are unknown (`known` false).
#pragma once

#ifndef DICE_HAVE_C10_CUDA
#define DICE_HAVE_C10_CUDA 0
#endif
#if DICE_HAVE_C10_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

namespace dice::bench {

struct GpuMemory {
  bool known = DICE_HAVE_C10_CUDA != 0;
  double peak = 0, current = 0;  // bytes
};

inline void reset_peak_gpu_memory() {
#if DICE_HAVE_C10_CUDA
  c10::cuda::CUDACachingAllocator::resetPeakStats(0);
#endif
}

inline GpuMemory gpu_memory() {
  GpuMemory m;
#if DICE_HAVE_C10_CUDA
  auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  m.peak = static_cast<double>(stats.allocated_bytes[0].peak);  // [0]: all pools together
  m.current = static_cast<double>(stats.allocated_bytes[0].current);
#endif
  return m;
}

}  // namespace dice::bench
