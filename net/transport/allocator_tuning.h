// Process-wide glibc malloc settings for processes that move large messages (every dice service
// calls this at start-up, see run_service_main()).
//
// By default glibc gives a heap's free top back to the kernel once it passes 128 KiB: with 64 KiB
// messages allocated and freed on several threads, nearly every message then returned its pages
// (madvise, brk) and faulted them in again on the next one, 13% of the time of a 64 KiB round
// trip. Raising the trim threshold keeps up to a few MiB per heap. Setting it switches off glibc's
// own adaptive thresholds, so the mmap threshold is set with it, to where the adaptive rule would
// have moved it for messages of a few MiB (below it, buffers come from the heap, not from a fresh
// mmap and munmap each time).
#pragma once

#include <cstddef>

namespace dice::transport {

// Allocations of this many bytes or more are mmapped; less comes from the heap.
inline constexpr std::size_t kMmapThresholdBytes = std::size_t{4} << 20;
// A heap keeps up to this much free memory at its top instead of returning it.
inline constexpr std::size_t kTrimThresholdBytes = std::size_t{8} << 20;

// Applies the two thresholds; idempotent. Returns false if glibc refused either (or the C library
// is not glibc), which only costs speed.
bool tune_allocator_for_messages();

}  // namespace dice::transport
