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
#pragma once

#include <cstdint>
#include <string>

namespace dice {

struct CacheEvictionOptions {
  // Bytes the cache's entries may hold; 0 = no limit.
  std::int64_t budget_bytes = 0;
  // Entries used within this many seconds are kept, whatever the budget.
  double keep_seconds = 3600;
};

// What one pass over the cache did.
struct CacheEviction {
  std::int64_t bytes_before = 0;  // of every entry, when the pass began
  std::int64_t bytes_after = 0;   // of the entries left
  int entries_removed = 0;
  // Over the budget with only entries younger than keep_seconds left: the cache stays over it.
  bool over_budget = false;
};

// Marks the entry folder `dir` used now. false when it is gone (evicted: build it again).
bool touch_cache_entry(const std::string& dir);

// Bytes of the regular files under `dir` (links not followed).
std::int64_t folder_bytes(const std::string& dir);

// Removes least recently used entries of `cache_dir` until the rest fit `options.budget_bytes`,
// and what a crash left of earlier evictions. Only build entries count and go (folders named by a
// hash); builds in progress and the binding preludes (pch-*) are left alone.
CacheEviction evict_cache_entries(const std::string& cache_dir,
                                  const CacheEvictionOptions& options);

}  // namespace dice
