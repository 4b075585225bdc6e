// Free and total memory of a CUDA device as the driver sees it, for sizing a KV cache at start.
//
// Read through the CUDA driver (libcuda.so.1, opened at run time): no build-time CUDA dependency,
// and the same answer whichever CUDA runtime LibTorch ships. The query runs in the device's
// primary context, the one LibTorch's runtime uses, so this process's own allocations count as
// used, as do other processes' (a learner on the same GPU).
#pragma once

#include <cstdint>

#include "common/status.h"

namespace dice {

struct DeviceMemory {
  std::uint64_t free_bytes = 0;
  std::uint64_t total_bytes = 0;
};

// Device `ordinal` (as CUDA_VISIBLE_DEVICES numbers them). An error, saying why, where there is
// no driver (a machine without a GPU) or no such device.
Result<DeviceMemory> cuda_device_memory(int ordinal);

}  // namespace dice
