#include "model/checkpoint/weights_checksum.h"

#include <cstdio>
#include <cstring>

namespace dice {
namespace {

// A multiply-xorshift mix over 8-byte words (the tail padded with zeros), chained: each word
// changes the state in every bit, and the order of words matters.
class Mixer {
 public:
  void add(const void* data, std::size_t n) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t word;
      std::memcpy(&word, bytes + i, 8);
      mix(word);
    }
    if (i < n) {
      std::uint64_t word = 0;
      std::memcpy(&word, bytes + i, n - i);
      mix(word ^ (static_cast<std::uint64_t>(n - i) << 56));
    }
    mix(n);  // the length ends each part, so parts cannot run into each other
  }
  std::uint64_t value() const { return state_; }

 private:
  void mix(std::uint64_t word) {
    state_ ^= word + 0x9e3779b97f4a7c15ULL + (state_ << 6) + (state_ >> 2);
    state_ *= 0xbf58476d1ce4e5b9ULL;
    state_ ^= state_ >> 31;
  }
  std::uint64_t state_ = 0x243f6a8885a308d3ULL;
};

}  // namespace

std::uint64_t weights_checksum(const Checkpoint& checkpoint) {
  Mixer m;
  for (const auto& [name, info] : checkpoint.tensors()) {  // a std::map: name order
    m.add(name.data(), name.size());
    const std::string dtype = dtype_name(info->dtype);
    m.add(dtype.data(), dtype.size());
    m.add(info->shape.data(), info->shape.size() * sizeof(int64_t));
    m.add(info->data, info->nbytes);
  }
  return m.value();
}

std::string checksum_hex(std::uint64_t checksum) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(checksum));
  return text;
}

}  // namespace dice
