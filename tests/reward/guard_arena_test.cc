// GuardArena (reward/evaluate/guard/guard_arena.h) over host memory: the layout of a block, what a
// write past either end of a tensor looks like to check(), the quarantine, reuse while not
// watching. The same arena runs on the GPU in dice_guard_alloc.so (reward_hacks_gpu_test).
#include "reward/evaluate/guard/guard_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <vector>

namespace dice {
namespace {

// Test double: "device" memory in host buffers. Counts fills and synchronisations; can be told to
// fail its fills or to run out of memory.
class HostMemoryForTest : public GuardDeviceMemory {
 public:
  uint64_t reserve(size_t bytes) override {
    if (reserved_ + bytes > limit) return 0;
    // 512-byte aligned, as the driver's are.
    chunks_.push_back(std::make_unique<unsigned char[]>(bytes + 512));
    reserved_ += bytes;
    const auto raw = reinterpret_cast<uint64_t>(chunks_.back().get());  // NOLINT
    return (raw + 511) / 512 * 512;
  }
  bool fill(uint64_t address, unsigned char value, size_t bytes, void* /*stream*/) override {
    ++fills;
    if (fail_fills) return false;
    std::memset(reinterpret_cast<void*>(address), value, bytes);  // NOLINT
    return true;
  }
  bool synchronize() override {
    ++syncs;
    return true;
  }
  bool read(uint64_t address, size_t bytes, unsigned char* out) override {
    std::memcpy(out, reinterpret_cast<const void*>(address), bytes);  // NOLINT
    return true;
  }
  std::string error() const override { return "test double refused"; }

  size_t limit = size_t{1} << 30;
  bool fail_fills = false;
  int fills = 0, syncs = 0;

 private:
  std::vector<std::unique_ptr<unsigned char[]>> chunks_;
  size_t reserved_ = 0;
};

unsigned char* bytes_at(uint64_t address) {
  return reinterpret_cast<unsigned char*>(address);
}

GuardArenaOptions small_options() {
  GuardArenaOptions o;
  o.back_guard_bytes = 4096;
  o.chunk_bytes = 1 << 20;
  return o;
}

class GuardArenaTest : public ::testing::Test {
 protected:
  HostMemoryForTest memory_;
  GuardArena arena_{&memory_, small_options()};
  void* stream_ = nullptr;
};

TEST_F(GuardArenaTest, AWatchedBlockIsAlignedPoisonedAndCheckedClean) {
  const uint64_t a = arena_.allocate(1000, stream_);
  ASSERT_NE(a, 0u);
  EXPECT_EQ(a % 512, 0u);
  // The tensor's bytes read 0xFF (NaN in every float type) until written.
  for (size_t i = 0; i < 1000; ++i) ASSERT_EQ(bytes_at(a)[i], 0xFF) << i;
  std::memset(bytes_at(a), 0, 1000);  // writing all of it, and no more, is fine
  const GuardCheck c = arena_.check();
  EXPECT_TRUE(c.error.empty()) << c.error;
  EXPECT_TRUE(c.violations.empty());
}

TEST_F(GuardArenaTest, OneBytePastTheExactEndIsCaughtWhateverTheSize) {
  // Sizes that fill their rounding exactly leave no slack: the guard starts at the size itself.
  for (size_t size : {1, 4, 511, 512, 1024, 4096 + 3}) {
    const uint64_t a = arena_.allocate(size, stream_);
    bytes_at(a)[size] = 0;
    const GuardCheck c = arena_.check();
    ASSERT_EQ(c.violations.size(), 1u) << "size " << size;
    EXPECT_EQ(c.violations[0].address, a);
    EXPECT_EQ(c.violations[0].size, size);
    EXPECT_TRUE(c.violations[0].live);
    EXPECT_EQ(c.violations[0].bytes_after, 1u);
    EXPECT_EQ(c.violations[0].reach_after, 1u);
    EXPECT_EQ(c.violations[0].bytes_before, 0u);
    arena_.release(a);
  }
}

TEST_F(GuardArenaTest, AWriteBeforeTheStartIsCaught) {
  const uint64_t a = arena_.allocate(256, stream_);
  std::memset(bytes_at(a) - 16, 0, 16);
  const GuardCheck c = arena_.check();
  ASSERT_EQ(c.violations.size(), 1u);
  EXPECT_EQ(c.violations[0].bytes_before, 16u);
  EXPECT_EQ(c.violations[0].bytes_after, 0u);
}

TEST_F(GuardArenaTest, AReportedWriteIsReportedOnceAndTheGuardsAreSetAgain) {
  const uint64_t a = arena_.allocate(64, stream_);
  std::memset(bytes_at(a) + 64, 7, 100);  // 100 bytes past the end
  const GuardCheck first = arena_.check();
  ASSERT_EQ(first.violations.size(), 1u);
  EXPECT_EQ(first.violations[0].bytes_after, 100u);
  EXPECT_EQ(first.violations[0].reach_after, 100u);
  EXPECT_TRUE(arena_.check().violations.empty());
  bytes_at(a)[64 + 2000] = 1;  // a new write is seen again
  const GuardCheck again = arena_.check();
  ASSERT_EQ(again.violations.size(), 1u);
  EXPECT_EQ(again.violations[0].reach_after, 2001u);
}

TEST_F(GuardArenaTest, AFreedTemporarysOverrunIsCaughtAtTheNextCheck) {
  const uint64_t t = arena_.allocate(128, stream_);
  bytes_at(t)[128 + 5] = 0;
  arena_.release(t);
  // Held back: the next allocation of the same size is other memory.
  const uint64_t u = arena_.allocate(128, stream_);
  EXPECT_NE(u, t);
  const GuardCheck c = arena_.check();
  ASSERT_EQ(c.violations.size(), 1u);
  EXPECT_EQ(c.violations[0].address, t);
  EXPECT_FALSE(c.violations[0].live);
  // After the check it is free again, and comes back poisoned and guarded.
  const uint64_t v = arena_.allocate(128, stream_);
  EXPECT_EQ(v, t);
  EXPECT_EQ(bytes_at(v)[0], 0xFF);
  EXPECT_TRUE(arena_.check().violations.empty());
}

TEST_F(GuardArenaTest, NeighboursHaveDifferentGuardBytesMostOfTheTime) {
  // A kernel copying past the end of one tensor into the space past another writes the first's
  // guard bytes over the second's: caught only where the two differ.
  int same = 0;
  uint64_t previous = arena_.allocate(16, stream_);
  for (int i = 0; i < 200; ++i) {
    const uint64_t next = arena_.allocate(16, stream_);
    const unsigned char guard = bytes_at(next)[16];
    same += bytes_at(previous)[16] == guard;
    // Never a byte of zeros, NaNs, infinities, +-1.0 or -1.
    for (unsigned char common : {0x00, 0xFF, 0x7F, 0x80, 0x3F, 0xC0}) ASSERT_NE(guard, common);
    previous = next;
  }
  EXPECT_LT(same, 30);  // 1 in 24 expected: ~8 of 200
}

TEST_F(GuardArenaTest, NotWatchingReusesAtOnceAndFillsNothing) {
  EXPECT_TRUE(arena_.set_watching(false));
  const int fills = memory_.fills;
  const uint64_t a = arena_.allocate(4096, stream_);
  arena_.release(a);
  const uint64_t b = arena_.allocate(4096, stream_);
  EXPECT_EQ(a, b);  // the timing loop's allocations cost a free-list lookup
  EXPECT_EQ(memory_.fills, fills);
  EXPECT_EQ(memory_.syncs, 0);
  // An unwatched block has no guards to check: a write past it is not reported.
  bytes_at(b)[4096] = 0;
  EXPECT_FALSE(arena_.set_watching(true));
  EXPECT_TRUE(arena_.check().violations.empty());
}

TEST_F(GuardArenaTest, BlocksAreReusedOnlyOnTheirOwnStream) {
  int s1 = 1, s2 = 2;
  arena_.set_watching(false);
  const uint64_t a = arena_.allocate(100, &s1);
  arena_.release(a);
  EXPECT_NE(arena_.allocate(100, &s2), a);
  EXPECT_EQ(arena_.allocate(100, &s1), a);
}

TEST_F(GuardArenaTest, AFullQuarantineIsCheckedAtOnce) {
  GuardArenaOptions o = small_options();
  o.quarantine_bytes = 64 << 10;
  GuardArena arena(&memory_, o);
  const uint64_t a = arena.allocate(1000, stream_);
  bytes_at(a)[1000] = 0;
  arena.release(a);
  EXPECT_EQ(memory_.syncs, 0);
  for (int i = 0; i < 20; ++i) arena.release(arena.allocate(8000, stream_));
  EXPECT_GT(memory_.syncs, 0);  // drained on the way
  EXPECT_LE(arena.stats().quarantined_bytes, o.quarantine_bytes);
  // What the drain found is in the next check.
  const GuardCheck c = arena.check();
  ASSERT_EQ(c.violations.size(), 1u);
  EXPECT_EQ(c.violations[0].address, a);
}

TEST_F(GuardArenaTest, OutOfMemoryDrainsTheQuarantineThenGivesZero) {
  memory_.limit = 1 << 20;  // one chunk
  const uint64_t a = arena_.allocate(600 << 10, stream_);
  ASSERT_NE(a, 0u);
  arena_.release(a);  // held: the chunk has no room for a second
  const uint64_t b = arena_.allocate(600 << 10, stream_);
  EXPECT_EQ(b, a);  // the drain freed it
  EXPECT_EQ(arena_.allocate(600 << 10, stream_), 0u);
}

TEST_F(GuardArenaTest, AFillThatFailedMakesTheCheckAnError) {
  memory_.fail_fills = true;
  arena_.allocate(10, stream_);
  const GuardCheck c = arena_.check();
  EXPECT_NE(c.error.find("test double refused"), std::string::npos) << c.error;
  memory_.fail_fills = false;
  EXPECT_TRUE(arena_.check().error.empty());  // reported once
}

TEST_F(GuardArenaTest, UnknownAddressesAreIgnored) {
  arena_.release(12345);
  const uint64_t a = arena_.allocate(8, stream_);
  arena_.release(a);
  arena_.release(a);  // twice
  EXPECT_EQ(arena_.stats().live_blocks, 0u);
  EXPECT_TRUE(arena_.check().violations.empty());
}

}  // namespace
}  // namespace dice
