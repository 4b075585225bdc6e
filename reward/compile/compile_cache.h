// The compile cache's size (compile.h has its layout: one folder per build, named by its hash).
//
// A build may make a module of at most CompileOptions::max_module_mb (a larger one is the
// candidate's resourceLimit and never enters the cache: compile_build.cc), and the cache keeps at
// most CompileOptions::cache_budget_mb of entries: after each build, the least recently used ones
// are removed until the rest fit.
//
// Least recently used: an entry's folder's modification time is its last use. A build sets it
// when it publishes the entry, and a cache hit sets it before it hands the module out
// (touch_cache_entry), so the clock is shared by every worker on the folder without any file of
// its own. Workers on one folder each evict, so eviction must be safe while another reads: an entry
// used within CompileOptions::cache_keep_seconds is never removed (a module is read when its
// candidate's evaluation starts, well within that after its hit or build), and removing one is a
// rename to `<hash>.evict-<pid>-<n>` first, then a second look at its time (a hit that touched it
// in between takes it back), then the delete: a reader finds the whole entry or none, never a half
// deleted one, and a hit on a missing entry builds it again.
//
// A full disk: builds write into the cache's folder, so the cache also gives way to the disk.
// With a floor of free space (run.min_free_disk_mb), least recently used entries go, by the same
// rules, while the disk holding the cache has less free than that, and make_room_for_build()
// refuses a build that would not fit even then, before its compiler writes a byte (a compiler
// that meets a full disk fails as if the candidate's code were wrong).
#pragma once

#include <cstdint>
#include <string>

#include "common/durable_file.h"
#include "common/status.h"

namespace dice {

struct CacheEvictionOptions {
  // Bytes the cache's entries may hold; 0 = no limit.
  std::int64_t budget_bytes = 0;
  // Entries used within this many seconds are kept, whatever the budget.
  double keep_seconds = 3600;
  // Bytes that must stay free on the disk holding the cache: entries also go while less is free;
  // 0 = the disk is not looked at.
  std::int64_t min_free_bytes = 0;
  // Where statvfs goes (tests set the free space). Default: posix_file_system()
  FileSystem* file_system = nullptr;
};

// What one pass over the cache did.
struct CacheEviction {
  std::int64_t bytes_before = 0;  // of every entry, when the pass began
  std::int64_t bytes_after = 0;   // of the entries left
  int entries_removed = 0;
  // Over the budget with only entries younger than keep_seconds left: the cache stays over it.
  bool over_budget = false;
  // Less than min_free_bytes free on the disk with only entries younger than keep_seconds left.
  bool disk_short = false;
};

// Marks the entry folder `dir` used now. false when it is gone (evicted: build it again).
bool touch_cache_entry(const std::string& dir);

// Bytes of the regular files under `dir` (links not followed).
std::int64_t folder_bytes(const std::string& dir);

// Removes least recently used entries of `cache_dir` until the rest fit `options.budget_bytes`
// and the disk has `options.min_free_bytes` free, and what a crash left of earlier evictions. Only
// build entries count and go (folders named by a hash); builds in progress and the binding preludes
// (pch-*) are left alone.
CacheEviction evict_cache_entries(const std::string& cache_dir,
                                  const CacheEvictionOptions& options);

// Before a build of up to `build_bytes` (CompileOptions::max_module_mb and its intermediate
// files): evicts as evict_cache_entries() does, with room for the build besides min_free_bytes,
// then checks the disk. IOError naming `cache_dir`, the bytes needed and free
// (common/disk_space.h) when it still has not that much free: only recently used entries are left.
Status make_room_for_build(const std::string& cache_dir, std::int64_t build_bytes,
                           const CacheEvictionOptions& options);

}  // namespace dice
