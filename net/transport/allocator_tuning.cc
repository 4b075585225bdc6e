#include "net/transport/allocator_tuning.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dice::transport {

bool tune_allocator_for_messages() {
#if defined(__GLIBC__)
  // mallopt returns 1 on success.
  const bool mmap_set = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThresholdBytes)) == 1;
  const bool trim_set = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThresholdBytes)) == 1;
  return mmap_set && trim_set;
#else
  return false;
#endif
}

}  // namespace dice::transport
