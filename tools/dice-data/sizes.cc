#include "tools/dice-data/sizes.h"

namespace dice::data {

std::vector<std::pair<std::string, std::int64_t>> Sizes::list() const {
  std::vector<std::pair<std::string, std::int64_t>> out = {{batch_name, batch}};
  if (!seq_name.empty()) out.emplace_back(seq_name, seq);
  out.emplace_back(dim_name, dim);
  return out;
}

Sizes draw_sizes(Prng& rng, bool three_d) {
  Sizes s;
  s.dim_name = rng.pick(std::vector<std::string>{"dim", "dim", "features", "hidden_size", "n"});
  s.batch = rng.chance(50) ? rng.pick(std::vector<std::int64_t>{1, 2, 4, 8, 16, 32, 64})
                           : rng.between(1, 64);
  const int kind = rng.below(10);
  if (kind < 4) {
    s.dim = rng.pick(std::vector<std::int64_t>{64, 128, 256, 512, 1024, 2048, 4096, 8192});
  } else if (kind < 7) {
    s.dim = rng.between(16, 4095) * 2 + 1;  // odd, 33..8191
  } else {
    s.dim = rng.between(33, 8192);
  }
  if (three_d) {
    s.seq_name = rng.pick(std::vector<std::string>{"seq_len", "channels", "tokens"});
    s.seq = rng.between(2, 32);
    if (s.batch > 16) s.batch = rng.between(1, 16);
    if (s.dim > 2048) s.dim = rng.between(33, 2048);
  }
  return s;
}

std::vector<SizeVariant> draw_variants(Prng& rng, const Sizes& sizes, bool dim_fixed, int threads) {
  auto small_batch = [&](std::int64_t avoid1, std::int64_t avoid2) {
    for (;;) {
      const std::int64_t b = rng.pick(std::vector<std::int64_t>{1, 1, 2, 3, 5, 7, 9});
      if (b != avoid1 && b != avoid2) return b;
    }
  };
  auto short_row = [&]() {
    for (;;) {
      const std::int64_t d = rng.pick(
          std::vector<std::int64_t>{1, 3, 17, 31, 33, 65, 127, 129, 255, 257, 383, 511, 513, 777});
      if (d != sizes.dim) return d;
    }
  };
  std::vector<SizeVariant> out;
  // Smaller: batch 1 and friends.
  const std::int64_t b1 = small_batch(sizes.batch, -1);
  out.push_back({{sizes.batch_name, b1}});
  // Short rows, shorter than a block or just past one, with another small batch.
  if (!dim_fixed) {
    SizeVariant second = {{sizes.batch_name, small_batch(sizes.batch, -1)}};
    if (!sizes.seq_name.empty()) second.emplace_back(sizes.seq_name, rng.between(1, 5));
    second.emplace_back(sizes.dim_name, short_row());
    out.push_back(second);
  }
  // Larger than the task's own shape, so that a kernel with the task's sizes written into it
  // leaves elements (or rows) unwritten instead of passing on the smaller shapes.
  if (dim_fixed || rng.chance(50)) {
    out.push_back({{sizes.batch_name, sizes.batch + rng.between(1, 8)}});
  } else {
    out.push_back({{sizes.dim_name, sizes.dim + 2 * rng.between(0, threads) + 1}});
  }
  return out;
}

}  // namespace dice::data
