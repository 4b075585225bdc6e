// Attention in query tiles, each reading only the keys that some query of the tile may see: the
// block skipping of the training layouts (attention_masks.h (a), (c), (d)).
//
// Their masks hide most of the score grid: a block-causal copy hides the later keys from every
// query (half the grid), and a noisy view's query sees one block of its own copy (a sliver). One
// dense attention computes every hidden score and then throws it away; LibTorch's fused kernels
// (memory-efficient attention with a mask) skip nothing either. Cutting the queries into tiles
// and giving each tile the key ranges it needs cuts the work to about the visible pairs plus a
// tile's width per query:
//
//   query tile [s, e) of a block-causal copy   reads keys [0, e)             (not [0, L))
//   query tile [s, e) of a view (layout (d))   reads its own keys [s, e) and the clean copy's
//                                              [0, e - block)                (not 2L keys)
//
// Exact: a key a tile leaves out is hidden from every query in the tile, and a hidden key adds
// exp(-inf) = 0 to a softmax row; only the order of the sums differs.
//
// A plan is built once per forward from the forward's mask (one small device-to-host copy: which
// key columns each tile sees) and shared by every layer and by the recomputation of checkpointed
// layers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace dice {

// One part of the key (or value) axis: `tensor` [B', kv_heads, K_part, E] and, when `rows` is
// defined, the rows index_select(0, rows) takes from it (a view's clean copy: one of C clean
// rows per view), after the key ranges are cut, so only the keys read are gathered.
struct KeyPart {
  at::Tensor tensor;
  at::Tensor rows;  // [B] int64 or undefined: tensor's rows are the batch as they are
};

class TiledAttention {
 public:
  // mask [B|1, 1, Q, K] bool, true = may attend; every query row allows at least one key.
  // tile: queries per tile, > 0; tile >= Q gives one tile (which still leaves out any key column
  // no query sees).
  static TiledAttention plan(const at::Tensor& mask, int64_t tile);

  // softmax(scale q k^T, mask) v through the tiles: q [B, heads, Q, E]; keys and values are the
  // key axis of length K in parts, concatenated in order (dice::compat's grouped-query rule:
  // heads a multiple of kv_heads). [B, heads, Q, Ev].
  at::Tensor attend(const at::Tensor& q, const std::vector<KeyPart>& keys,
                    const std::vector<KeyPart>& values, double scale) const;

  // Scores the tiles compute as a fraction of the dense Q x K grid (benches and tests).
  double computed_fraction() const;
  int64_t tiles() const { return static_cast<int64_t>(tiles_.size()); }

 private:
  struct KeyRange {
    int64_t begin = 0, end = 0;
  };
  struct Tile {
    int64_t begin = 0, end = 0;  // queries
    std::vector<KeyRange> keys;  // key columns read, ascending, disjoint
    at::Tensor mask;             // [B|1, 1, end - begin, keys read]
  };

  static at::Tensor gather(const std::vector<KeyPart>& parts, const std::vector<KeyRange>& ranges);

  std::vector<Tile> tiles_;
  int64_t queries_ = 0, keys_ = 0;
};

}  // namespace dice
