#include "rollout/kv_slot_budget.h"

#include <algorithm>
#include <cstdio>

namespace dice {
namespace {

double gib(std::uint64_t bytes) {
  return static_cast<double>(bytes) / static_cast<double>(1ull << 30);
}

// Activations one token holds at once in a forward, in elements: the residual stream, its norm
// and the attention output (hidden each), q, k and v, and the MLP's gate, up and product.
std::uint64_t activation_elements_per_token(const ModelConfig& m) {
  const auto hidden = static_cast<std::uint64_t>(m.hidden_size);
  const auto qkv =
      static_cast<std::uint64_t>((m.num_attention_heads + 2 * m.num_key_value_heads) * m.head_dim);
  return 3 * hidden + qkv + 3 * static_cast<std::uint64_t>(m.intermediate_size);
}

}  // namespace

std::uint64_t kv_bytes_per_token(const ModelConfig& m, std::int64_t dtype_bytes) {
  return 2ull * static_cast<std::uint64_t>(m.num_hidden_layers) *
         static_cast<std::uint64_t>(m.num_key_value_heads) *
         static_cast<std::uint64_t>(m.head_dim) * static_cast<std::uint64_t>(dtype_bytes);
}

Result<SlotBudget> kv_slot_budget(const SlotBudgetInput& in) {
  if (!(in.gpu_memory_fraction > 0 && in.gpu_memory_fraction <= 1)) {
    return Status::invalid_argument("rollout.gpu_memory_fraction must be in (0, 1], got " +
                                    std::to_string(in.gpu_memory_fraction));
  }
  if (in.max_batch < 1 || in.max_sequence_length < 1 || in.max_prefill_tokens < 1 ||
      in.dtype_bytes < 1 || in.model.block_size < 1) {
    return Status::invalid_argument(
        "KV slot budget: max_batch, max_sequence_length, max_prefill_tokens, the dtype and the "
        "block size must be positive");
  }
  const ModelConfig& m = in.model;
  const auto dtype = static_cast<std::uint64_t>(in.dtype_bytes);
  const auto block = static_cast<std::uint64_t>(m.block_size);
  // Decoding: a block per sequence through the layers, and its logits in fp32 three times over
  // (logits, softmax, the draw's working copy).
  const std::uint64_t decode_per_slot =
      block * (activation_elements_per_token(m) * dtype +
               3ull * 4ull * static_cast<std::uint64_t>(m.vocab_size));
  const std::uint64_t prefill =
      static_cast<std::uint64_t>(in.max_prefill_tokens) * activation_elements_per_token(m) * dtype;

  SlotBudget out;
  out.bytes_per_slot =
      kv_bytes_per_token(m, in.dtype_bytes) * static_cast<std::uint64_t>(in.max_sequence_length) +
      decode_per_slot;
  const auto share_total =
      static_cast<std::uint64_t>(in.gpu_memory_fraction * static_cast<double>(in.total_bytes));
  const std::uint64_t share = share_total > in.weights_bytes ? share_total - in.weights_bytes : 0;
  const std::uint64_t free_now =
      in.free_bytes > kSlotBudgetHeadroomBytes ? in.free_bytes - kSlotBudgetHeadroomBytes : 0;
  const std::uint64_t available = std::min(share, free_now);
  out.room_bytes = available > prefill ? available - prefill : 0;
  const std::uint64_t fit = out.room_bytes / out.bytes_per_slot;
  out.slots =
      static_cast<int>(std::min<std::uint64_t>(fit, static_cast<std::uint64_t>(in.max_batch)));
  if (out.slots < 1) {
    char why[512];
    std::snprintf(why, sizeof why,
                  "rollout: not one sequence fits on the GPU: its KV cache of "
                  "max_sequence_length %lld tokens needs %.2f GiB, and %.2f GiB is left "
                  "(rollout.gpu_memory_fraction %.2f of %.1f GiB = %.1f GiB, less %.1f GiB of "
                  "weights; %.1f GiB free now, %.1f kept as headroom; %.2f GiB for the prefill "
                  "of max_prefill_tokens %lld). Lower rollout.max_sequence_length, raise "
                  "rollout.gpu_memory_fraction, or free the GPU",
                  static_cast<long long>(in.max_sequence_length), gib(out.bytes_per_slot),
                  gib(out.room_bytes), in.gpu_memory_fraction, gib(in.total_bytes),
                  gib(share_total), gib(in.weights_bytes), gib(in.free_bytes),
                  gib(kSlotBudgetHeadroomBytes), gib(prefill),
                  static_cast<long long>(in.max_prefill_tokens));
    return Status::invalid_argument(why);
  }
  return out;
}

std::string SlotBudget::describe(const SlotBudgetInput& in) const {
  char line[320];
  std::snprintf(line, sizeof line,
                "%d slot(s) of %lld tokens (%.0f MiB each) in %.1f GiB (max_batch %d; "
                "gpu_memory_fraction %.2f of %.1f GiB, weights %.1f GiB, %.1f GiB free)",
                slots, static_cast<long long>(in.max_sequence_length),
                static_cast<double>(bytes_per_slot) / (1 << 20), gib(room_bytes), in.max_batch,
                in.gpu_memory_fraction, gib(in.total_bytes), gib(in.weights_bytes),
                gib(in.free_bytes));
  return line;
}

}  // namespace dice
