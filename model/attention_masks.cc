#include "model/attention_masks.h"

#include <ATen/ATen.h>

#include <algorithm>

namespace dice {
namespace {

at::Tensor block_of(const at::Tensor& positions, int64_t block_size) {
  return at::div(positions, block_size, /*rounding_mode=*/"floor");
}

}  // namespace

at::Tensor block_causal_mask(int64_t length, int64_t block_size, c10::Device device) {
  at::Tensor block =
      block_of(at::arange(length, at::TensorOptions(device).dtype(at::kLong)), block_size);
  return (block.unsqueeze(0) <= block.unsqueeze(1)).view({1, 1, length, length});
}

at::Tensor cached_chunk_mask(const std::vector<int64_t>& cache_lengths,
                             const std::vector<int64_t>& valid, int64_t chunk_len,
                             int64_t block_size, c10::Device device) {
  const int64_t batch = static_cast<int64_t>(cache_lengths.size());
  const int64_t slots =
      (batch == 0 ? 0 : *std::max_element(cache_lengths.begin(), cache_lengths.end())) + chunk_len;
  // One non-blocking copy: from pageable host memory it is staged at once, and a blocking one
  // would wait for every kernel queued before it (a stream sync per decode step).
  std::vector<int64_t> both(cache_lengths);
  both.insert(both.end(), valid.begin(), valid.end());
  at::Tensor host = at::tensor(both, at::kLong).to(device, /*non_blocking=*/true);
  return cached_chunk_mask(host.narrow(0, 0, batch), host.narrow(0, batch, batch), chunk_len, slots,
                           block_size);
}

at::Tensor cached_chunk_mask(const at::Tensor& cache_lengths, const at::Tensor& valid,
                             int64_t chunk_len, int64_t key_slots, int64_t block_size) {
  const int64_t batch = cache_lengths.size(0);
  const auto long_opts = cache_lengths.options().dtype(at::kLong);
  at::Tensor len = cache_lengths.view({batch, 1, 1});
  at::Tensor end = len + valid.view({batch, 1, 1});
  at::Tensor query_pos = len + at::arange(chunk_len, long_opts).view({1, chunk_len, 1});
  at::Tensor slot = at::arange(key_slots, long_opts).view({1, 1, key_slots});
  at::Tensor visible = (slot < end) | (slot == query_pos);
  at::Tensor causal = block_of(slot, block_size) <= block_of(query_pos, block_size);
  return (visible & causal).unsqueeze(1);  // [B, 1, T, S]
}

at::Tensor training_mask(int64_t length, int64_t block_size, c10::Device device) {
  at::Tensor block =
      block_of(at::arange(length, at::TensorOptions(device).dtype(at::kLong)), block_size);
  at::Tensor q = block.unsqueeze(1), k = block.unsqueeze(0);
  at::Tensor xt_xt = q == k;
  at::Tensor xt_x0 = k < q;
  at::Tensor x0_xt = at::zeros({length, length}, at::TensorOptions(device).dtype(at::kBool));
  at::Tensor x0_x0 = k <= q;
  at::Tensor top = at::cat({xt_xt, xt_x0}, 1);
  at::Tensor bottom = at::cat({x0_xt, x0_x0}, 1);
  return at::cat({top, bottom}, 0).view({1, 1, 2 * length, 2 * length});
}

at::Tensor training_views_mask(int64_t length, int64_t block_size, c10::Device device) {
  return training_mask(length, block_size, device).narrow(2, 0, length);
}

at::Tensor packed_training_mask(const std::vector<int64_t>& lengths, int64_t block_size,
                                c10::Device device) {
  std::vector<int64_t> sequence;
  for (std::size_t s = 0; s < lengths.size(); ++s) sequence.insert(sequence.end(), lengths[s], s);
  const auto length = static_cast<int64_t>(sequence.size());
  const auto long_options = at::TensorOptions(device).dtype(at::kLong);
  at::Tensor block = block_of(at::arange(length, long_options), block_size);
  at::Tensor seq = at::tensor(sequence, at::TensorOptions().dtype(at::kLong)).to(device);
  at::Tensor same = seq.unsqueeze(1) == seq.unsqueeze(0);
  at::Tensor q = block.unsqueeze(1), k = block.unsqueeze(0);
  at::Tensor top = at::cat({same & (q == k), same & (k < q)}, 1);
  at::Tensor bottom =
      at::cat({at::zeros({length, length}, long_options.dtype(at::kBool)), same & (k <= q)}, 1);
  return at::cat({top, bottom}, 0).view({1, 1, 2 * length, 2 * length});
}

at::Tensor packed_training_positions(const std::vector<int64_t>& lengths, c10::Device device) {
  std::vector<int64_t> local;
  for (int64_t n : lengths) {
    for (int64_t i = 0; i < n; ++i) local.push_back(i);
  }
  at::Tensor p = at::tensor(local, at::TensorOptions().dtype(at::kLong)).to(device);
  return at::cat({p, p});
}

at::Tensor training_positions(int64_t length, c10::Device device) {
  at::Tensor p = at::arange(length, at::TensorOptions(device).dtype(at::kLong));
  return at::cat({p, p});
}

}  // namespace dice
