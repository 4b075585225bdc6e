// The generator's only source of randomness: SplitMix64 (Steele, Lea, Flood 2014). Every draw is
// a fixed function of the seed on every platform and standard library, which
// std::uniform_int_distribution does not promise (its algorithm is the library's choice), so the
// same --seed gives byte-identical files everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dice::data {

class Prng {
 public:
  explicit Prng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

  // Uniform in [0, n) for n > 0; the modulo bias (n / 2^64) is far below anything visible here.
  int below(int n) { return static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  // Uniform in [lo, hi], both included.
  int between(int lo, int hi) { return lo + below(hi - lo + 1); }
  // True with probability percent / 100.
  bool chance(int percent) { return below(100) < percent; }

  template <typename T>
  const T& pick(const std::vector<T>& items) {
    return items[static_cast<std::size_t>(below(static_cast<int>(items.size())))];
  }

 private:
  std::uint64_t state_;
};

// A seed for one item from the run's seed and the item's place (split, index): each item draws
// from a generator of its own, so asking for more SFT pairs does not change the RL tasks.
inline std::uint64_t item_seed(std::uint64_t seed, const std::string& stream, std::uint64_t index) {
  std::uint64_t h = seed ^ 0x6A09E667F3BCC908ULL;
  for (unsigned char c : stream) h = (h ^ c) * 0x100000001B3ULL;  // FNV-1a over the stream name
  Prng mix(h ^ (index * 0x9E3779B97F4A7C15ULL));
  mix.next();
  return mix.next();
}

}  // namespace dice::data
