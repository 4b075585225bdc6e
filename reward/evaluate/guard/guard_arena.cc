#include "reward/evaluate/guard/guard_arena.h"

#include <algorithm>

namespace dice {

namespace {

constexpr size_t kAlignment = 512;
// Body bytes of a watched block: NaN in float32/16, bfloat16 and float64, -1 in integers.
constexpr unsigned char kBodyByte = 0xFF;
// Guard byte values: none of 0x00, 0xFF, 0x7F, 0x80, 0x3F, 0xC0 (the bytes of zeros, NaNs,
// infinities, +-1.0 and -1 in the float, half and integer types), so an ordinary value written
// over a guard changes at least one of its bytes.
constexpr unsigned char kGuardBytes[] = {0x5A, 0xA5, 0x96, 0x69, 0xC3, 0x3C, 0xB4, 0x4B,
                                         0xD2, 0x2D, 0xE1, 0x1E, 0x87, 0x78, 0x93, 0x39,
                                         0x6C, 0xC6, 0x9C, 0xA9, 0x5C, 0xE5, 0x4E, 0xB1};

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

GuardArena::GuardArena(GuardDeviceMemory* memory, GuardArenaOptions options)
    : memory_(memory), options_(options), rng_(options.seed * 2 + 1) {}

size_t GuardArena::block_bytes(size_t size) const {
  return round_up(options_.front_guard_bytes + size + options_.back_guard_bytes, kAlignment);
}

unsigned char GuardArena::next_guard_byte() {
  // xorshift64*: cheap, and no two neighbouring blocks need the same value often.
  rng_ ^= rng_ >> 12;
  rng_ ^= rng_ << 25;
  rng_ ^= rng_ >> 27;
  const uint64_t r = rng_ * 0x2545F4914F6CDD1DULL;
  return kGuardBytes[(r >> 32) % sizeof(kGuardBytes)];
}

uint64_t GuardArena::take(size_t bytes, void* stream) {
  auto it = free_.find({stream, bytes});
  if (it != free_.end() && !it->second.empty()) {
    const uint64_t base = it->second.back();
    it->second.pop_back();
    return base;
  }
  if (chunk_end_ - chunk_next_ < bytes) {
    const size_t want =
        bytes <= options_.chunk_bytes ? options_.chunk_bytes : round_up(bytes, size_t{2} << 20);
    const uint64_t chunk = memory_->reserve(want);
    if (chunk == 0) return 0;
    chunk_next_ = chunk;
    chunk_end_ = chunk + want;
  }
  const uint64_t base = chunk_next_;
  chunk_next_ += bytes;
  return base;
}

uint64_t GuardArena::allocate(size_t size, void* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  Block b;
  b.bytes = block_bytes(size);
  b.size = size;
  b.stream = stream;
  b.base = take(b.bytes, stream);
  if (b.base == 0 && !quarantine_.empty()) {
    drain_quarantine();  // held blocks may be the memory this needs
    b.base = take(b.bytes, stream);
  }
  if (b.base == 0) return 0;
  b.watched = watching_;
  if (b.watched) {
    b.guard = next_guard_byte();
    if (!fill_guards(b, stream, /*body=*/true) && error_.empty())
      error_ = "fill: " + memory_->error();
  }
  const uint64_t address = b.base + options_.front_guard_bytes;
  live_[address] = b;
  return address;
}

bool GuardArena::fill_guards(const Block& b, void* stream, bool body) {
  const uint64_t address = b.base + options_.front_guard_bytes;
  return memory_->fill(b.base, b.guard, options_.front_guard_bytes, stream) &&
         (!body || memory_->fill(address, kBodyByte, b.size, stream)) &&
         memory_->fill(address + b.size, b.guard, b.bytes - options_.front_guard_bytes - b.size,
                       stream);
}

void GuardArena::release(uint64_t address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = live_.find(address);
  if (it == live_.end()) return;
  const Block b = it->second;
  live_.erase(it);
  if (b.watched && watching_) {
    quarantine_.push_back(b);
    quarantined_bytes_ += b.bytes;
    if (quarantined_bytes_ > options_.quarantine_bytes) drain_quarantine();
    return;
  }
  free_[{b.stream, b.bytes}].push_back(b.base);
}

bool GuardArena::set_watching(bool watching) {
  std::lock_guard<std::mutex> lock(mutex_);
  const bool was = watching_;
  watching_ = watching;
  return was;
}

bool GuardArena::inspect(const Block& b, bool live, std::vector<GuardViolation>* found) {
  const size_t front = options_.front_guard_bytes;
  const size_t back = b.bytes - front - b.size;
  scratch_.resize(std::max(front, back));
  GuardViolation v;
  v.address = b.base + front;
  v.size = b.size;
  v.live = live;
  if (!memory_->read(b.base, front, scratch_.data())) return false;
  v.bytes_before = static_cast<size_t>(std::count_if(
      scratch_.begin(), scratch_.begin() + front, [&](unsigned char c) { return c != b.guard; }));
  if (!memory_->read(v.address + b.size, back, scratch_.data())) return false;
  for (size_t i = 0; i < back; ++i) {
    if (scratch_[i] != b.guard) {
      ++v.bytes_after;
      v.reach_after = i + 1;
    }
  }
  if (v.bytes_before + v.bytes_after > 0) found->push_back(v);
  return true;
}

void GuardArena::drain_quarantine() {
  if (!memory_->synchronize() && error_.empty()) error_ = "synchronize: " + memory_->error();
  for (const Block& b : quarantine_) {
    if (!inspect(b, /*live=*/false, &pending_) && error_.empty()) {
      error_ = "read: " + memory_->error();
    }
    free_[{b.stream, b.bytes}].push_back(b.base);
  }
  quarantine_.clear();
  quarantined_bytes_ = 0;
}

GuardCheck GuardArena::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  drain_quarantine();
  GuardCheck out;
  out.violations = std::move(pending_);
  pending_.clear();
  std::vector<Block> refill;
  for (const auto& [address, b] : live_) {
    if (!b.watched) continue;
    const size_t before = out.violations.size();
    if (!inspect(b, /*live=*/true, &out.violations) && error_.empty()) {
      error_ = "read: " + memory_->error();
    }
    if (out.violations.size() > before) refill.push_back(b);
  }
  // Guards reported once are set again, so that the next check reports only new writes. Only
  // the guards: the tensor's own bytes are its owner's.
  for (const Block& b : refill) {
    if (!(fill_guards(b, nullptr, /*body=*/false) && memory_->synchronize()) && error_.empty()) {
      error_ = "refill: " + memory_->error();
    }
  }
  std::sort(out.violations.begin(), out.violations.end(),
            [](const GuardViolation& a, const GuardViolation& b) { return a.address < b.address; });
  out.error = std::move(error_);
  error_.clear();
  return out;
}

GuardArenaStats GuardArena::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  GuardArenaStats s;
  s.live_blocks = live_.size();
  s.quarantined_bytes = quarantined_bytes_;
  return s;
}

}  // namespace dice
