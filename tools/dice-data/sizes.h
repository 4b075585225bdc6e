// Sizes of a reference's inputs and the task's other shapes (shape_variants). Sizes cover what
// KernelBench-style problems use (batch 1-64, rows of 33-8192 elements, odd ones included); the
// variants add the cases a kernel fixed to one shape gets wrong: batch 1, a row length that is
// not a multiple of the block, rows shorter than a block.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/dice-data/kernel_pair.h"
#include "tools/dice-data/prng.h"

namespace dice::data {

// Module-level sizes of one reference, in the order they are written: batch first, then an
// optional middle size (3-D inputs), then the row length.
struct Sizes {
  std::string batch_name = "batch_size";
  std::int64_t batch = 16;
  std::string seq_name;  // empty for 2-D inputs
  std::int64_t seq = 0;
  std::string dim_name = "dim";
  std::int64_t dim = 1024;

  std::vector<std::pair<std::string, std::int64_t>> list() const;
};

// Draws sizes: 2-D (batch, dim) or, with `three_d`, (batch, seq, dim) with a smaller total.
Sizes draw_sizes(Prng& rng, bool three_d);

// The task's other shapes: a smaller batch; unless `dim_fixed` (the row length is a constructor
// argument, nn.LayerNorm(dim), so only the batch may vary) short rows (1, 17, 257, ...: shorter
// than a block or just past one); and a shape larger than the task's own (batch, or a row longer
// by an odd count up to 2 * `threads`), which a kernel with the task's sizes written in fails.
// 3 variants, 2 with `dim_fixed`.
std::vector<SizeVariant> draw_variants(Prng& rng, const Sizes& sizes, bool dim_fixed, int threads);

}  // namespace dice::data
