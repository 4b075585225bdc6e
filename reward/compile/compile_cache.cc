#include "reward/compile/compile_cache.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <vector>

#include "common/disk_space.h"
#include "common/remove_tree.h"

namespace dice {
namespace {

namespace fs = std::filesystem;

constexpr char kEvictMark[] = ".evict-";

// A build entry's name: the hash alone (content_hash_hex: lowercase hex).
bool is_entry_name(const std::string& name) {
  return !name.empty() && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

double age_seconds(const fs::path& dir, bool* exists) {
  std::error_code ec;
  const auto when = fs::last_write_time(dir, ec);
  *exists = !ec;
  if (ec) return 0;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - when).count();
}

struct Entry {
  fs::path dir;
  double age = 0;
  std::int64_t bytes = 0;
};

// Removes `entry` unless it is used meanwhile (see the header): true when it is gone.
bool evict_entry(const Entry& entry, double keep_seconds) {
  static std::atomic<std::uint64_t> counter{0};
  const fs::path away =
      entry.dir.string() + kEvictMark + std::to_string(getpid()) + "-" + std::to_string(counter++);
  std::error_code rename_ec;
  fs::rename(entry.dir, away, rename_ec);
  if (rename_ec) return false;  // gone already: another worker's eviction took it
  bool exists = false;
  if (age_seconds(away, &exists) < keep_seconds && exists) {
    // Used between the listing and the rename: back where it was, unless a build of the same
    // hash has published there since (then that one stays, and this copy goes).
    std::error_code back_ec;
    fs::rename(away, entry.dir, back_ec);
    if (!back_ec) return false;
  }
  remove_tree(away).ignore();
  return true;
}

// Whether the disk holding `cache_dir` has less than options.min_free_bytes free (false when it
// cannot be read: the writes themselves will say).
bool disk_short(const std::string& cache_dir, const CacheEvictionOptions& options) {
  if (options.min_free_bytes <= 0) return false;
  const Result<std::uint64_t> free_bytes =
      free_disk_bytes(cache_dir, options.file_system ? *options.file_system : posix_file_system());
  return free_bytes.ok() && *free_bytes < static_cast<std::uint64_t>(options.min_free_bytes);
}

}  // namespace

bool touch_cache_entry(const std::string& dir) {
  std::error_code ec;
  fs::last_write_time(dir, fs::file_time_type::clock::now(), ec);
  return !ec;
}

std::int64_t folder_bytes(const std::string& dir) {
  std::int64_t total = 0;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const auto size = it->file_size(size_ec);
      if (!size_ec) total += static_cast<std::int64_t>(size);
    }
  }
  return total;
}

CacheEviction evict_cache_entries(const std::string& cache_dir,
                                  const CacheEvictionOptions& options) {
  CacheEviction out;
  std::vector<Entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(cache_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    if (name.find(kEvictMark) != std::string::npos) {
      remove_tree(it->path().string()).ignore();  // an eviction that did not finish, or another's
      continue;
    }
    if (!is_entry_name(name)) continue;
    bool exists = false;
    Entry entry{it->path(), age_seconds(it->path(), &exists), folder_bytes(it->path().string())};
    if (!exists) continue;
    out.bytes_before += entry.bytes;
    entries.push_back(std::move(entry));
  }
  out.bytes_after = out.bytes_before;
  auto over_budget = [&] {
    return options.budget_bytes > 0 && out.bytes_after > options.budget_bytes;
  };
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.age > b.age; });
  for (const Entry& entry : entries) {
    if (!over_budget() && !disk_short(cache_dir, options)) break;
    if (entry.age < options.keep_seconds) break;  // every later one is younger still
    if (!evict_entry(entry, options.keep_seconds)) continue;
    out.bytes_after -= entry.bytes;
    ++out.entries_removed;
  }
  out.over_budget = over_budget();
  out.disk_short = disk_short(cache_dir, options);
  return out;
}

Status make_room_for_build(const std::string& cache_dir, std::int64_t build_bytes,
                           const CacheEvictionOptions& options) {
  CacheEvictionOptions with_build = options;
  with_build.min_free_bytes = options.min_free_bytes + build_bytes;
  evict_cache_entries(cache_dir, with_build);
  return check_free_disk_space(
      cache_dir, static_cast<std::uint64_t>(build_bytes), "a build in the compile cache",
      {static_cast<std::uint64_t>(options.min_free_bytes), options.file_system});
}

}  // namespace dice
