#include "learner/train/device_cache.h"

#include <cstdint>
#include <string>

#include "common/log.h"
#include "model/cuda_allocator.h"

namespace dice {
namespace {

std::int64_t mib(std::uint64_t bytes) {
  return static_cast<std::int64_t>(bytes >> 20);
}

}  // namespace

void release_learner_cache(int device, std::string_view stage) {
  const CachedDeviceMemory before = cached_device_memory(device);
  if (!before.known) return;
  release_cached_device_memory();
  const CachedDeviceMemory after = cached_device_memory(device);
  DICE_LOG(Info) << "learner GPU memory released" << kv("stage", std::string(stage))
                 << kv("device", device) << kv("peak_reserved_mib", mib(before.peak_reserved))
                 << kv("peak_allocated_mib", mib(before.peak_allocated))
                 << kv("reserved_before_mib", mib(before.reserved))
                 << kv("reserved_after_mib", mib(after.reserved))
                 << kv("allocated_mib", mib(after.allocated));
  reset_peak_device_memory(device);
}

}  // namespace dice
