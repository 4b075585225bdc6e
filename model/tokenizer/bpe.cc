#include "model/tokenizer/bpe.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>

namespace dice::tokenizer {
namespace {

constexpr std::uint32_t kNoRank = std::numeric_limits<std::uint32_t>::max();

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finalizer
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_bytes(std::string_view s) {  // FNV-1a, then mixed
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  return mix(h);
}

std::size_t round_up_pow2(std::size_t n) {
  std::size_t p = 16;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

// --- MergeTable

MergeTable::MergeTable(std::size_t expected) : slots_(round_up_pow2(expected * 2)) {}

void MergeTable::grow() {
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(old.size() * 2, Entry{});
  size_ = 0;
  for (const Entry& e : old) {
    if (e.key != kEmpty) {
      insert(static_cast<std::int32_t>(e.key >> 32), static_cast<std::int32_t>(e.key), e.rank,
             e.merged);
    }
  }
}

void MergeTable::insert(std::int32_t left, std::int32_t right, std::uint32_t rank,
                        std::int32_t merged) {
  if ((size_ + 1) * 2 > slots_.size()) grow();
  const std::uint64_t k = key(left, right);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = mix(k) & mask;; i = (i + 1) & mask) {
    Entry& e = slots_[i];
    if (e.key == kEmpty) {
      e = {k, rank, merged};
      ++size_;
      return;
    }
    if (e.key == k) {
      e.rank = rank;
      e.merged = merged;
      return;
    }
  }
}

const MergeTable::Entry* MergeTable::find(std::int32_t left, std::int32_t right) const {
  const std::uint64_t k = key(left, right);
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t i = mix(k) & mask;; i = (i + 1) & mask) {
    const Entry& e = slots_[i];
    if (e.key == k) return &e;
    if (e.key == kEmpty) return nullptr;
  }
}

// --- WordCache

WordCache::WordCache(std::size_t capacity)
    : capacity_(std::max<std::size_t>(capacity, 1)), slots_(round_up_pow2(capacity_ * 2)) {
  keys_.reserve(capacity_ * 16);
  ids_.reserve(capacity_ * 4);
}

void WordCache::clear_locked() {
  std::fill(slots_.begin(), slots_.end(), Slot{});
  used_ = 0;
  keys_.clear();
  ids_.clear();
}

bool WordCache::lookup(std::string_view word, std::vector<std::int32_t>* ids) const {
  if (word.size() > kMaxWordBytes) return false;
  const std::uint64_t h = hash_bytes(word);
  const std::size_t mask = slots_.size() - 1;
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const Slot& s = slots_[i];
    if (!s.used) return false;
    if (s.hash == h && s.key_length == word.size() &&
        std::memcmp(keys_.data() + s.key_offset, word.data(), word.size()) == 0) {
      ids->insert(ids->end(), ids_.begin() + s.ids_offset,
                  ids_.begin() + s.ids_offset + s.ids_length);
      return true;
    }
  }
}

void WordCache::insert(std::string_view word, const std::int32_t* ids, std::size_t n) {
  if (word.size() > kMaxWordBytes) return;
  const std::uint64_t h = hash_bytes(word);
  const std::size_t mask = slots_.size() - 1;
  std::lock_guard<std::mutex> lock(mu_);
  // Full (by count or by arena bytes): start over rather than grow.
  if (used_ + 1 > capacity_ || keys_.size() + word.size() > keys_.capacity() ||
      ids_.size() + n > ids_.capacity()) {
    clear_locked();
  }
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    Slot& s = slots_[i];
    if (s.used) {
      if (s.hash == h && s.key_length == word.size() &&
          std::memcmp(keys_.data() + s.key_offset, word.data(), word.size()) == 0) {
        return;  // another thread got here first
      }
      continue;
    }
    s.used = true;
    s.hash = h;
    s.key_offset = static_cast<std::uint32_t>(keys_.size());
    s.key_length = static_cast<std::uint32_t>(word.size());
    s.ids_offset = static_cast<std::uint32_t>(ids_.size());
    s.ids_length = static_cast<std::uint32_t>(n);
    keys_.append(word.data(), word.size());
    ids_.insert(ids_.end(), ids, ids + n);
    ++used_;
    return;
  }
}

// --- BpeModel

BpeModel::BpeModel(std::array<std::int32_t, 256> byte_ids, MergeTable merges,
                   std::size_t cache_capacity)
    : byte_ids_(byte_ids), merges_(std::move(merges)), cache_(cache_capacity) {}

void BpeModel::encode_word(std::string_view word, BpeScratch* scratch,
                           std::vector<std::int32_t>* ids) const {
  if (word.size() == 1) {
    ids->push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (cache_.lookup(word, ids)) return;
  std::vector<std::int32_t>& symbols = scratch->symbols;
  symbols.clear();
  for (char c : word) symbols.push_back(byte_ids_[static_cast<unsigned char>(c)]);
  if (symbols.size() > kHeapThreshold) {
    merge_heap(scratch);
  } else {
    merge_scan(scratch);
  }
  ids->insert(ids->end(), symbols.begin(), symbols.end());
  cache_.insert(word, symbols.data(), symbols.size());
}

// O(n^2) in the worst case, but n <= kHeapThreshold and each step is a few compares.
void BpeModel::merge_scan(BpeScratch* scratch) const {
  std::vector<std::int32_t>& sym = scratch->symbols;
  std::vector<std::uint32_t>& ranks = scratch->ranks;  // ranks[i]: pair (sym[i], sym[i + 1])
  const auto rank_of = [&](std::size_t i) {
    const MergeTable::Entry* e = merges_.find(sym[i], sym[i + 1]);
    return e ? e->rank : kNoRank;
  };
  ranks.clear();
  for (std::size_t i = 0; i + 1 < sym.size(); ++i) ranks.push_back(rank_of(i));
  while (sym.size() > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i < ranks.size(); ++i) {
      if (ranks[i] < ranks[best]) best = i;  // strict: the leftmost of equal ranks wins
    }
    if (ranks[best] == kNoRank) break;
    sym[best] = merges_.find(sym[best], sym[best + 1])->merged;
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
    ranks.erase(ranks.begin() + static_cast<std::ptrdiff_t>(best));
    if (best + 1 < sym.size()) ranks[best] = rank_of(best);
    if (best > 0) ranks[best - 1] = rank_of(best - 1);
  }
}

// A min-heap of candidate pairs keyed by (rank, position of the left symbol): the same order
// as the scan. Entries go stale as neighbours merge; a popped entry is used only if the pair
// now at its position still merges with the same rank, which makes it indistinguishable from
// the entry pushed for that pair (same key), so the order stays exact.
void BpeModel::merge_heap(BpeScratch* scratch) const {
  std::vector<std::int32_t>& sym = scratch->symbols;
  std::vector<std::int32_t>& prev = scratch->prev;
  std::vector<std::int32_t>& next = scratch->next;
  std::vector<std::uint64_t>& heap = scratch->heap;  // rank << 32 | left position
  const std::int32_t n = static_cast<std::int32_t>(sym.size());
  prev.resize(n);
  next.resize(n);
  for (std::int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  heap.clear();
  const auto push = [&](std::int32_t left) {
    if (left < 0 || next[left] < 0) return;
    const MergeTable::Entry* e = merges_.find(sym[left], sym[next[left]]);
    if (!e) return;
    heap.push_back((static_cast<std::uint64_t>(e->rank) << 32) | static_cast<std::uint32_t>(left));
    std::push_heap(heap.begin(), heap.end(), std::greater<std::uint64_t>());
  };
  for (std::int32_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<std::uint64_t>());
    const std::uint64_t top = heap.back();
    heap.pop_back();
    const std::int32_t left = static_cast<std::int32_t>(top & 0xffffffffu);
    const std::uint32_t rank = static_cast<std::uint32_t>(top >> 32);
    const std::int32_t right = next[left];
    if (sym[left] < 0 || right < 0) continue;  // merged away, or nothing to its right now
    const MergeTable::Entry* e = merges_.find(sym[left], sym[right]);
    if (!e || e->rank != rank) continue;  // the pair changed since it was pushed
    sym[left] = e->merged;
    sym[right] = -1;
    next[left] = next[right];
    if (next[left] >= 0) prev[next[left]] = left;
    push(prev[left]);
    push(left);
  }
  std::int32_t out = 0;
  for (std::int32_t i = 0; i >= 0; i = next[i]) sym[out++] = sym[i];
  sym.resize(out);
}

}  // namespace dice::tokenizer
