// The compile cache's budget (compile_cache.h) on a folder of fake entries: least recently used
// entries go until the rest fit, entries used within the keep time stay whatever the budget, a hit
// (touch) keeps an entry, and nothing but build entries is counted or removed; a disk short of its
// floor of free space evicts by the same rules, and a build that would not fit is refused.
#include "reward/compile/compile_cache.h"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kMiB = 1 << 20;

// A disk as a test double: `capacity` bytes, of which the cache folder's files take their size.
class CacheDiskTestDouble : public FileSystem {
 public:
  CacheDiskTestDouble(std::string dir, std::int64_t capacity)
      : dir_(std::move(dir)), capacity_(capacity) {}
  int statvfs(const std::string&, struct statvfs* out) override {
    *out = {};
    out->f_frsize = 1;
    out->f_bavail =
        static_cast<fsblkcnt_t>(std::max<std::int64_t>(capacity_ - folder_bytes(dir_), 0));
    return 0;
  }

 private:
  std::string dir_;
  std::int64_t capacity_;
};

class CompileCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dice-cache-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(remove_tree(dir_).ok());
    fs::create_directories(dir_);
  }
  void TearDown() override { EXPECT_TRUE(remove_tree(dir_).ok()); }

  // A folder `name` holding one file of `mib` MiB, last used `hours_ago`.
  fs::path entry(const std::string& name, std::int64_t mib, double hours_ago) {
    const fs::path path = dir_ / name;
    fs::create_directories(path);
    std::ofstream(path / "m.so", std::ios::binary) << std::string(mib * kMiB, 'x');
    fs::last_write_time(path, fs::file_time_type::clock::now() -
                                  std::chrono::duration_cast<fs::file_time_type::duration>(
                                      std::chrono::duration<double>(hours_ago * 3600)));
    return path;
  }

  fs::path dir_;
};

TEST_F(CompileCacheTest, LeastRecentlyUsedEntriesGoUntilTheRestFit) {
  const fs::path oldest = entry("a1", 1, 5), old = entry("b2", 1, 4), newer = entry("c3", 1, 3),
                 newest = entry("d4", 1, 2);
  // Not build entries: a build in progress, a binding prelude. Neither counted nor removed.
  const fs::path building = entry("e5.build-1-0", 1, 9), prelude = entry("pch-0123", 1, 9);
  // What a crashed eviction left: removed.
  const fs::path leftover = entry("f6.evict-1-0", 1, 9);
  CacheEvictionOptions o;
  o.budget_bytes = 2 * kMiB + kMiB / 2;
  o.keep_seconds = 60;
  const CacheEviction done = evict_cache_entries(dir_.string(), o);
  EXPECT_EQ(done.bytes_before, 4 * kMiB);
  EXPECT_EQ(done.bytes_after, 2 * kMiB);
  EXPECT_EQ(done.entries_removed, 2);
  EXPECT_FALSE(done.over_budget);
  EXPECT_FALSE(fs::exists(oldest));
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(newer / "m.so"));
  EXPECT_TRUE(fs::exists(newest / "m.so"));
  EXPECT_TRUE(fs::exists(building));
  EXPECT_TRUE(fs::exists(prelude));
  EXPECT_FALSE(fs::exists(leftover));
  for (const auto& e : fs::directory_iterator(dir_)) {
    EXPECT_EQ(e.path().filename().string().find(".evict-"), std::string::npos) << e.path();
  }
}

// Another worker on the folder may be about to read an entry it just built or hit.
TEST_F(CompileCacheTest, EntriesUsedWithinTheKeepTimeStayOverTheBudget) {
  const fs::path old = entry("a1", 1, 5);
  const fs::path recent = entry("b2", 2, 0.1);
  CacheEvictionOptions o;
  o.budget_bytes = kMiB;
  o.keep_seconds = 3600;
  const CacheEviction done = evict_cache_entries(dir_.string(), o);
  EXPECT_EQ(done.entries_removed, 1);
  EXPECT_TRUE(done.over_budget);
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(recent / "m.so"));
}

TEST_F(CompileCacheTest, AHitKeepsItsEntryAndAMissingEntryIsNoHit) {
  const fs::path hit = entry("a1", 1, 5), other = entry("b2", 1, 4);
  EXPECT_TRUE(touch_cache_entry(hit.string()));
  EXPECT_FALSE(touch_cache_entry((dir_ / "c3").string()));
  CacheEvictionOptions o;
  o.budget_bytes = kMiB;
  o.keep_seconds = 60;
  evict_cache_entries(dir_.string(), o);
  EXPECT_TRUE(fs::exists(hit / "m.so"));
  EXPECT_FALSE(fs::exists(other));
}

TEST_F(CompileCacheTest, NoBudgetRemovesNothing) {
  const fs::path old = entry("a1", 2, 50);
  const CacheEviction done = evict_cache_entries(dir_.string(), CacheEvictionOptions{});
  EXPECT_EQ(done.entries_removed, 0);
  EXPECT_EQ(done.bytes_before, 2 * kMiB);
  EXPECT_TRUE(fs::exists(old / "m.so"));
}

// Builds write into the cache's folder: while its disk has less than the floor free, least
// recently used entries go as for the budget, and no more than needed.
TEST_F(CompileCacheTest, ADiskShortOfItsFloorEvictsLeastRecentlyUsedEntries) {
  const fs::path oldest = entry("a1", 1, 5), old = entry("b2", 1, 4), newer = entry("c3", 1, 3),
                 newest = entry("d4", 1, 2);
  CacheDiskTestDouble disk(dir_.string(), 5 * kMiB);  // 1 MiB free
  CacheEvictionOptions o;
  o.keep_seconds = 60;
  o.min_free_bytes = 2 * kMiB + kMiB / 2;
  o.file_system = &disk;
  const CacheEviction done = evict_cache_entries(dir_.string(), o);
  EXPECT_EQ(done.entries_removed, 2);
  EXPECT_FALSE(done.disk_short);
  EXPECT_FALSE(done.over_budget);
  EXPECT_FALSE(fs::exists(oldest));
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(newer / "m.so"));
  EXPECT_TRUE(fs::exists(newest / "m.so"));
}

// Before a build: old entries make room; a build that would not fit even then is refused before
// its compiler writes a byte, with the bytes, and a recently used entry stays.
TEST_F(CompileCacheTest, ABuildThatWouldNotFitIsRefusedAfterTheOldEntriesGo) {
  const fs::path old = entry("a1", 1, 5), recent = entry("b2", 1, 0.1);
  CacheDiskTestDouble disk(dir_.string(), 4 * kMiB);  // 2 MiB free
  CacheEvictionOptions o;
  o.keep_seconds = 3600;
  o.min_free_bytes = kMiB;
  o.file_system = &disk;
  const Status refused = make_room_for_build(dir_.string(), 3 * kMiB, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.message(), dir_.string() +
                                   ": not enough free disk space for a build in the compile "
                                   "cache: it needs 3.0 MiB (3145728 bytes) and "
                                   "run.min_free_disk_mb keeps 1.0 MiB (1048576 bytes) free; "
                                   "3.0 MiB (3145728 bytes) are free");
  EXPECT_FALSE(fs::exists(old));
  EXPECT_TRUE(fs::exists(recent / "m.so"));
  EXPECT_TRUE(make_room_for_build(dir_.string(), 2 * kMiB, o).ok());
  EXPECT_TRUE(fs::exists(recent / "m.so"));
}

}  // namespace
}  // namespace dice
