// Qwen3LMImpl: lm_head and the three attention layouts (block-causal, cached chunk, training).
#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "model/attention_masks.h"
#include "model/qwen3.h"
#include "model/tiled_attention.h"

namespace dice {

Qwen3LMImpl::Qwen3LMImpl(const ModelConfig& config, const c10::TensorOptions& options)
    : config_(config) {
  model = register_module("model", Qwen3Model(config, options));
  if (config.tie_word_embeddings) {
    lm_head = model->embed_tokens;  // the same tensor: one parameter, two uses
  } else {
    lm_head = register_parameter(
        "lm_head", at::empty({config.vocab_size, config.hidden_size}, options).normal_(0.0, 0.02));
  }
}

at::Tensor Qwen3LMImpl::logits(const at::Tensor& hidden) {
  return at::linear(hidden, lm_head);
}

at::Tensor Qwen3LMImpl::forward(const at::Tensor& input_ids, const at::Tensor& positions,
                                const at::Tensor& mask) {
  TORCH_CHECK(input_ids.dim() == 2, "Qwen3LM: input_ids must be [batch, length], got ",
              input_ids.sizes());
  AttentionContext ctx;
  ctx.mask = mask;
  return logits(model(input_ids, positions.dim() == 1 ? positions.unsqueeze(0) : positions, ctx));
}

at::Tensor Qwen3LMImpl::forward_block_causal(const at::Tensor& input_ids) {
  TORCH_CHECK(input_ids.dim() == 2, "Qwen3LM: input_ids must be [batch, length], got ",
              input_ids.sizes());
  const int64_t len = input_ids.size(1);
  const c10::Device device = input_ids.device();
  at::Tensor positions = at::arange(len, input_ids.options().dtype(at::kLong)).unsqueeze(0);
  return forward(input_ids, positions, block_causal_mask(len, config_.block_size, device));
}

at::Tensor Qwen3LMImpl::forward_cached(const at::Tensor& input_ids,
                                       const std::vector<int64_t>& valid, KvCache& cache,
                                       bool store) {
  return logits(hidden_cached(input_ids, valid, cache, store));
}

void Qwen3LMImpl::prefill(const at::Tensor& input_ids, const std::vector<int64_t>& valid,
                          KvCache& cache) {
  (void)hidden_cached(input_ids, valid, cache, /*store=*/true);
}

CachedChunkLayout Qwen3LMImpl::chunk_layout(const KvCache& cache, const std::vector<int64_t>& valid,
                                            int64_t chunk_len, bool packed, c10::Device device,
                                            int64_t key_slots_multiple) const {
  const int64_t batch = cache.batch(), len = chunk_len;
  TORCH_CHECK(static_cast<int64_t>(valid.size()) == batch, "Qwen3LM: ", valid.size(),
              " valid counts for a batch of ", batch);
  TORCH_CHECK(cache.num_layers() == config_.num_hidden_layers, "Qwen3LM: cache has ",
              cache.num_layers(), " layers, model ", config_.num_hidden_layers);
  const std::vector<int64_t>& lengths = cache.lengths();
  int64_t tokens = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = lengths[static_cast<size_t>(b)];
    const int64_t v = valid[static_cast<size_t>(b)];
    TORCH_CHECK(v >= 0 && v <= len, "Qwen3LM: row ", b, ": valid ", v, " outside [0, ", len, "]");
    // A chunk continuing a partly stored block would attend to keys computed without it.
    TORCH_CHECK(v == 0 || n % config_.block_size == 0, "Qwen3LM: row ", b, ": cache length ", n,
                " is not a multiple of block_size ", config_.block_size);
    TORCH_CHECK(n + len <= cache.capacity(), "Qwen3LM: row ", b, ": cache length ", n, " + chunk ",
                len, " exceeds capacity ", cache.capacity());
    tokens += packed ? v : len;
  }
  TORCH_CHECK(tokens > 0, "Qwen3LM: a packed chunk with no valid token");
  // Everything the device needs in one host buffer and one non-blocking copy (pageable memory is
  // staged at once; no stream sync): lengths, valid, then per token its position, cache slot and
  // (packed) grid place.
  std::vector<int64_t> host(lengths);
  host.insert(host.end(), valid.begin(), valid.end());
  host.resize(static_cast<size_t>(2 * batch + (packed ? 3 : 2) * tokens));
  int64_t* position = host.data() + 2 * batch;
  int64_t* write_row = position + tokens;
  int64_t* grid = write_row + tokens;
  int64_t i = 0;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t n = lengths[static_cast<size_t>(b)];
    const int64_t end = packed ? valid[static_cast<size_t>(b)] : len;
    for (int64_t t = 0; t < end; ++t, ++i) {
      position[i] = n + t;
      write_row[i] = b * cache.capacity() + n + t;
      if (packed) grid[i] = b * len + t;
    }
  }
  at::Tensor dev =
      at::tensor(host, at::TensorOptions().dtype(at::kLong)).to(device, /*non_blocking=*/true);
  CachedChunkLayout layout;
  layout.rows = batch;
  layout.chunk_len = len;
  const int64_t needed = *std::max_element(lengths.begin(), lengths.end()) + len;
  const int64_t multiple = std::max<int64_t>(key_slots_multiple, 1);
  layout.key_slots = std::min(cache.capacity(), (needed + multiple - 1) / multiple * multiple);
  layout.tokens = tokens;
  layout.positions = dev.narrow(0, 2 * batch, tokens).view({packed ? 1 : batch, packed ? -1 : len});
  layout.write_rows = dev.narrow(0, 2 * batch + tokens, tokens);
  if (packed) layout.grid_index = dev.narrow(0, 2 * batch + 2 * tokens, tokens);
  // [B, 1, T, S] -> [B, 1, groups * T, S]: one copy of the mask per query head sharing a key/value
  // head (AttentionContext), query (g, t) at g * T + t.
  const int64_t groups = config_.num_attention_heads / config_.num_key_value_heads;
  at::Tensor mask = cached_chunk_mask(dev.narrow(0, 0, batch), dev.narrow(0, batch, batch), len,
                                      layout.key_slots, config_.block_size);
  layout.mask = groups == 1 ? mask
                            : mask.unsqueeze(2)
                                  .expand({batch, 1, groups, len, layout.key_slots})
                                  .reshape({batch, 1, groups * len, layout.key_slots});
  return layout;
}

at::Tensor Qwen3LMImpl::hidden_chunk(const at::Tensor& input_ids, const CachedChunkLayout& layout,
                                     KvCache& cache) {
  const bool packed = layout.grid_index.defined();
  TORCH_CHECK(packed ? input_ids.dim() == 1 && input_ids.size(0) == layout.tokens
                     : input_ids.dim() == 2 && input_ids.size(0) == layout.rows &&
                           input_ids.size(1) == layout.chunk_len,
              "Qwen3LM: input_ids ", input_ids.sizes(), " do not fit the chunk layout (",
              layout.rows, " rows x ", layout.chunk_len, ", ", layout.tokens, " tokens",
              packed ? ", packed)" : ")");
  TORCH_CHECK(cache.batch() == layout.rows, "Qwen3LM: the layout has ", layout.rows,
              " rows but the cache ", cache.batch());
  AttentionContext ctx;
  ctx.cache = &cache;
  ctx.write_rows = layout.write_rows;
  ctx.key_slots = layout.key_slots;
  ctx.mask = layout.mask;
  ctx.grid_rows = layout.rows;
  ctx.grid_len = layout.chunk_len;
  ctx.grid_index = layout.grid_index;
  at::Tensor out = model(packed ? input_ids.unsqueeze(0) : input_ids, layout.positions, ctx);
  return packed ? out.squeeze(0) : out;
}

at::Tensor Qwen3LMImpl::hidden_cached(const at::Tensor& input_ids,
                                      const std::vector<int64_t>& valid, KvCache& cache,
                                      bool store) {
  TORCH_CHECK(input_ids.dim() == 2, "Qwen3LM: input_ids must be [batch, length], got ",
              input_ids.sizes());
  const int64_t batch = input_ids.size(0);
  TORCH_CHECK(batch == cache.batch(), "Qwen3LM: batch ", batch, " but the cache has ",
              cache.batch(), " rows");
  CachedChunkLayout layout =
      chunk_layout(cache, valid, input_ids.size(1), /*packed=*/false, input_ids.device());
  at::Tensor out = hidden_chunk(input_ids, layout, cache);
  if (store) {
    const std::vector<int64_t> lengths = cache.lengths();
    for (int64_t b = 0; b < batch; ++b) {
      cache.set_length(b, lengths[static_cast<size_t>(b)] + valid[static_cast<size_t>(b)]);
    }
  }
  return out;
}

at::Tensor Qwen3LMImpl::forward_training(const at::Tensor& x_t, const at::Tensor& x_0) {
  return logits(hidden_training(x_t, x_0));
}

at::Tensor Qwen3LMImpl::hidden_training_packed(const at::Tensor& x_t, const at::Tensor& x_0,
                                               const std::vector<int64_t>& lengths) {
  TORCH_CHECK(x_t.dim() == 2 && x_t.size(0) == 1 && x_t.sizes() == x_0.sizes(),
              "Qwen3LM: packed x_t and x_0 must both be [1, length], got ", x_t.sizes(), " and ",
              x_0.sizes());
  return hidden_training_rows(x_t, x_0, {lengths});
}

at::Tensor Qwen3LMImpl::hidden_training_rows(const at::Tensor& x_t, const at::Tensor& x_0,
                                             const std::vector<std::vector<int64_t>>& row_lengths) {
  TORCH_CHECK(x_t.dim() == 2 && x_t.sizes() == x_0.sizes(),
              "Qwen3LM: packed x_t and x_0 must both be [rows, length], got ", x_t.sizes(), " and ",
              x_0.sizes());
  TORCH_CHECK(static_cast<int64_t>(row_lengths.size()) == x_t.size(0),
              "Qwen3LM: ", row_lengths.size(), " rows of lengths for ", x_t.size(0),
              " packed rows");
  const int64_t len = x_t.size(1);
  const c10::Device device = x_t.device();
  std::vector<at::Tensor> masks, positions;
  for (const std::vector<int64_t>& lengths : row_lengths) {
    int64_t total = 0;
    for (int64_t n : lengths) {
      TORCH_CHECK(n > 0 && n % config_.block_size == 0, "Qwen3LM: packed sequence length ", n,
                  " is not a positive multiple of block_size ", config_.block_size);
      total += n;
    }
    TORCH_CHECK(total == len, "Qwen3LM: packed lengths sum to ", total, ", the row has ", len);
    masks.push_back(packed_training_mask(lengths, config_.block_size, device));
    positions.push_back(packed_training_positions(lengths, device));
  }
  return hidden_x_t(x_t, x_0, at::cat(masks, 0), at::stack(positions, 0));
}

at::Tensor Qwen3LMImpl::hidden_training(const at::Tensor& x_t, const at::Tensor& x_0) {
  TORCH_CHECK(x_t.dim() == 2 && x_t.sizes() == x_0.sizes(),
              "Qwen3LM: x_t and x_0 must both be [batch, length], got ", x_t.sizes(), " and ",
              x_0.sizes());
  const int64_t len = x_t.size(1);
  const c10::Device device = x_t.device();
  return hidden_x_t(x_t, x_0, training_mask(len, config_.block_size, device),
                    training_positions(len, device));
}

at::Tensor Qwen3LMImpl::hidden_training_views(const at::Tensor& x_t, const at::Tensor& x_0,
                                              const std::vector<int64_t>& view_clean) {
  TORCH_CHECK(x_t.dim() == 2 && x_0.dim() == 2 && x_t.size(1) == x_0.size(1),
              "Qwen3LM: views x_t [V, L] and clean x_0 [C, L] of one length, got ", x_t.sizes(),
              " and ", x_0.sizes());
  TORCH_CHECK(static_cast<int64_t>(view_clean.size()) == x_t.size(0),
              "Qwen3LM: ", view_clean.size(), " clean rows named for ", x_t.size(0), " views");
  for (int64_t c : view_clean) {
    TORCH_CHECK(c >= 0 && c < x_0.size(0), "Qwen3LM: view of clean row ", c, " of ", x_0.size(0));
  }
  const int64_t len = x_t.size(1);
  const c10::Device device = x_t.device();
  AttentionContext ctx;
  ctx.mask = block_causal_mask(len, config_.block_size, device);
  ctx.clean_rows = x_0.size(0);
  ctx.view_clean = at::tensor(view_clean, at::TensorOptions().dtype(at::kLong)).to(device);
  ctx.view_mask = training_views_mask(len, config_.block_size, device);
  ctx.tiles = plan_tiles(ctx.mask);
  ctx.view_tiles = plan_tiles(ctx.view_mask);
  at::Tensor positions =
      at::arange(len, at::TensorOptions().dtype(at::kLong).device(device)).unsqueeze(0);
  at::Tensor hidden = model(at::cat({x_0, x_t}, 0), positions, ctx);
  return hidden.narrow(0, x_0.size(0), x_t.size(0));
}

std::shared_ptr<const TiledAttention> Qwen3LMImpl::plan_tiles(const at::Tensor& mask) const {
  // Whole blocks a tile: a block's queries see the same keys, so a tile edge inside a block
  // would read that block's keys twice.
  const int64_t block = config_.block_size;
  const int64_t tile = model->attention_tile > 0
                           ? (model->attention_tile + block - 1) / block * block
                           : mask.size(2);
  return std::make_shared<const TiledAttention>(TiledAttention::plan(mask, tile));
}

at::Tensor Qwen3LMImpl::hidden_x_t(const at::Tensor& x_t, const at::Tensor& x_0,
                                   const at::Tensor& mask, const at::Tensor& positions) {
  AttentionContext ctx;
  ctx.mask = mask;
  ctx.tiles = plan_tiles(mask);
  at::Tensor hidden =
      model(at::cat({x_t, x_0}, 1), positions.dim() == 1 ? positions.unsqueeze(0) : positions, ctx);
  return hidden.narrow(1, 0, x_t.size(1));
}

}  // namespace dice
