// tune_allocator_for_messages(): after it, a freed buffer of a few hundred KiB stays with the heap
// instead of being trimmed (or mmapped and unmapped) on every message.
#include "net/transport/allocator_tuning.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace dice::transport {
namespace {

TEST(AllocatorTuning, LargeFreedBuffersStayWithTheHeap) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  // The sanitizers replace malloc with their own allocator, which has no glibc thresholds to set
  // (its mallopt refuses them): nothing of glibc's to check here.
  GTEST_SKIP() << "built with a sanitizer: malloc is the sanitizer's, not glibc's";
#endif
  ASSERT_TRUE(tune_allocator_for_messages());
  ASSERT_TRUE(tune_allocator_for_messages());           // idempotent
  constexpr std::size_t kBytes = std::size_t{1} << 20;  // above glibc's default 128 KiB thresholds
  const struct mallinfo2 before = mallinfo2();
  void* volatile buffer = std::malloc(kBytes);
  ASSERT_NE(buffer, nullptr);
  std::memset(buffer, 1, kBytes);
  // From the heap, not a fresh mmap of its own.
  EXPECT_EQ(mallinfo2().hblkhd, before.hblkhd);
  std::free(buffer);
  // Not given back to the kernel: the next buffer of this size reuses the pages.
  EXPECT_GE(mallinfo2().arena, kBytes);
}

}  // namespace
}  // namespace dice::transport
