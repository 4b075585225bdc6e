// Byte-level BPE on token ids: a word (one pre-tokenizer piece) starts as one token per byte,
// then the adjacent pair with the lowest merge rank is merged, leftmost first, until no pair
// has a merge. This is the order Hugging Face's `tokenizers` and transformers.js both use.
//
// Words are short, so the common path is a plain scan; words past kHeapThreshold symbols (long
// runs of spaces or '=') switch to a heap so that cost stays O(n log n). A bounded cache maps
// recently seen words to their ids, which is most of the work on code: `    return`, ` self`.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dice::tokenizer {

// (left id, right id) -> (rank, merged id), open addressing. Built once, read concurrently.
class MergeTable {
 public:
  struct Entry {
    std::uint64_t key = kEmpty;  // left << 32 | right
    std::uint32_t rank = 0;
    std::int32_t merged = -1;
  };

  explicit MergeTable(std::size_t expected = 0);

  // Adds or replaces (a later duplicate wins, as in Hugging Face and transformers.js).
  void insert(std::int32_t left, std::int32_t right, std::uint32_t rank, std::int32_t merged);
  const Entry* find(std::int32_t left, std::int32_t right) const;
  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  static std::uint64_t key(std::int32_t l, std::int32_t r) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(l)) << 32) |
           static_cast<std::uint32_t>(r);
  }
  void grow();

  std::vector<Entry> slots_;
  std::size_t size_ = 0;
};

// Word bytes -> ids for recently seen words; thread-safe. Keys and ids live in two arenas and
// the table is cleared whole when either fills up, which bounds memory with no per-entry
// allocation.
class WordCache {
 public:
  // capacity: most entries held. Words longer than kMaxWordBytes are never cached.
  explicit WordCache(std::size_t capacity);

  static constexpr std::size_t kMaxWordBytes = 256;

  // Appends the cached ids of `word` to *ids and returns true, or returns false.
  bool lookup(std::string_view word, std::vector<std::int32_t>* ids) const;
  void insert(std::string_view word, const std::int32_t* ids, std::size_t n);

 private:
  struct Slot {
    std::uint64_t hash = 0;
    std::uint32_t key_offset = 0, key_length = 0;
    std::uint32_t ids_offset = 0, ids_length = 0;
    bool used = false;
  };
  void clear_locked();

  std::size_t capacity_;
  mutable std::mutex mu_;
  std::vector<Slot> slots_;  // 2 x capacity, a power of two
  std::size_t used_ = 0;
  std::string keys_;
  std::vector<std::int32_t> ids_;
};

// Scratch space for one encode call, so that merging allocates nothing once it has grown.
struct BpeScratch {
  std::vector<std::int32_t> symbols;
  std::vector<std::uint32_t> ranks;
  std::vector<std::int32_t> prev, next;
  std::vector<std::uint64_t> heap;
};

class BpeModel {
 public:
  // byte_ids: the token of each single byte. merges: the merge rules.
  BpeModel(std::array<std::int32_t, 256> byte_ids, MergeTable merges, std::size_t cache_capacity);

  // Appends the ids of `word` (raw bytes, not empty) to *ids.
  void encode_word(std::string_view word, BpeScratch* scratch,
                   std::vector<std::int32_t>* ids) const;

  static constexpr std::size_t kHeapThreshold = 64;

 private:
  void merge_scan(BpeScratch* scratch) const;
  void merge_heap(BpeScratch* scratch) const;

  std::array<std::int32_t, 256> byte_ids_;
  MergeTable merges_;
  mutable WordCache cache_;
};

}  // namespace dice::tokenizer
