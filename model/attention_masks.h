// The attention masks and positions of the three ways the block-diffusion model is run.
// Every mask is bool, true = the query may attend to the key (SDPA's convention), shaped to
// broadcast over heads: [batch or 1, 1, queries, keys]. Block of position p = p / block_size.
//
// (a) block-causal, one sequence of length L at positions 0..L-1:
//       query i sees key j  iff  block(j) <= block(i)
//
// (b) cached chunk: row b holds len_b committed tokens in the cache; the chunk's T tokens sit at
//     positions len_b .. len_b+T-1, of which the first valid_b are real (the rest is padding).
//     Keys are cache slots 0 .. S-1 (the chunk is written at slots len_b .. len_b+T-1):
//       query t sees slot j  iff  block(j) <= block(len_b + t)  and
//                                 (j < len_b + valid_b  or  j == len_b + t)
//     (padding queries see themselves so that no softmax row is empty; their output is junk.)
//
// (c) training: input = x_t (L noisy tokens) then x_0 (the same L tokens, clean); both copies
//     take positions 0..L-1. With i, j the positions inside each copy:
//       x_t query i sees x_t key j  iff  block(j) == block(i)
//       x_t query i sees x_0 key j  iff  block(j) <  block(i)
//       x_0 query i sees x_0 key j  iff  block(j) <= block(i)
//       x_0 never sees x_t.
//
//            keys:  x_t           x_0
//     x_t   [ same block   | earlier blocks ]
//     x_0   [   nothing    | block-causal   ]
//
// (d) training, several noisy views of one clean copy: the clean sequence runs once, as (a), and
//     each view's queries see the view's own keys and the clean copy's as in (c): the x_t rows
//     of (c). What each view computes is exactly (c)'s x_t half; the clean copy is not repeated.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <vector>

namespace dice {

// (a) [1, 1, L, L].
at::Tensor block_causal_mask(int64_t length, int64_t block_size, c10::Device device);

// (b) [B, 1, T, S] with S = max(cache_lengths) + T.
at::Tensor cached_chunk_mask(const std::vector<int64_t>& cache_lengths,
                             const std::vector<int64_t>& valid, int64_t chunk_len,
                             int64_t block_size, c10::Device device);
// (b) from device tensors, without a host copy: cache_lengths and valid [B] int64, on the device
// the mask is built on; key_slots = S >= max(cache_lengths) + T. [B, 1, T, S].
at::Tensor cached_chunk_mask(const at::Tensor& cache_lengths, const at::Tensor& valid,
                             int64_t chunk_len, int64_t key_slots, int64_t block_size);

// (c) [1, 1, 2L, 2L].
at::Tensor training_mask(int64_t length, int64_t block_size, c10::Device device);
// (d) shared clean copies (Qwen3LM::hidden_training_views): a noisy view's queries against its
// own keys, then its clean row's: (c)'s x_t rows, [1, 1, L, 2L]. The clean rows use (a).
at::Tensor training_views_mask(int64_t length, int64_t block_size, c10::Device device);
// (c) positions 0..L-1, 0..L-1: [2L] int64.
at::Tensor training_positions(int64_t length, c10::Device device);

// (c) packed: sequences of the given lengths (each a whole number of blocks) side by side in one
// row of L = their sum, each on its own: the rules of (c) within a sequence, nothing across
// (block boundaries then never straddle two sequences). [1, 1, 2L, 2L].
at::Tensor packed_training_mask(const std::vector<int64_t>& lengths, int64_t block_size,
                                c10::Device device);
// (c) packed: positions restart at 0 in each sequence, in both copies: [2L] int64.
at::Tensor packed_training_positions(const std::vector<int64_t>& lengths, c10::Device device);

}  // namespace dice
