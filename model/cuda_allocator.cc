#include "model/cuda_allocator.h"

#ifndef DICE_HAVE_C10_CUDA
#define DICE_HAVE_C10_CUDA 0
#endif
#if DICE_HAVE_C10_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/util/Exception.h>
#endif

namespace dice {

#if DICE_HAVE_C10_CUDA
namespace {

bool device_present(int device) {
  return device >= 0 && device < static_cast<int>(c10::cuda::device_count());
}

}  // namespace

// The allocator's per-device tables exist once CUDA is initialised in this process; before that
// (a learner that never touched the GPU) it throws, which here means "nothing to tell".
CachedDeviceMemory cached_device_memory(int device) {
  CachedDeviceMemory m;
  if (!device_present(device)) return m;
  try {
    const auto stats =
        c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(device));
    constexpr int kAllPools = 0;  // StatType::AGGREGATE
    m.allocated = static_cast<std::uint64_t>(stats.allocated_bytes[kAllPools].current);
    m.reserved = static_cast<std::uint64_t>(stats.reserved_bytes[kAllPools].current);
    m.peak_allocated = static_cast<std::uint64_t>(stats.allocated_bytes[kAllPools].peak);
    m.peak_reserved = static_cast<std::uint64_t>(stats.reserved_bytes[kAllPools].peak);
    m.known = true;
  } catch (const c10::Error&) {
    return {};
  }
  return m;
}

void reset_peak_device_memory(int device) {
  if (!device_present(device)) return;
  try {
    c10::cuda::CUDACachingAllocator::resetPeakStats(static_cast<c10::DeviceIndex>(device));
  } catch (const c10::Error&) {
  }
}

void release_cached_device_memory() {
  if (c10::cuda::device_count() == 0) return;
  try {
    c10::cuda::CUDACachingAllocator::emptyCache();
  } catch (const c10::Error&) {
  }
}

#else

CachedDeviceMemory cached_device_memory(int /*device*/) {
  return {};
}
void reset_peak_device_memory(int /*device*/) {}
void release_cached_device_memory() {}

#endif

}  // namespace dice
