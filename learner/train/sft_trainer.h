// SftTrainer: supervised fine-tuning of the block-diffusion model (REFERENCE section 2).
//
//   per sample:  t ~ U(0, 1), p = (1 - 1e-3) t + 1e-3
//                x_0 = prompt + response, padded with the mask token to whole blocks
//                x_t = x_0 with each response token masked with probability p (prompt never)
//                loss = sum over masked response tokens of -log p_theta(x_0 | x_t, x_0 blocks
//                       before) / p, divided by the response length
//   per step:    the mean over the batch's samples (one training-layout forward per sample, or
//                per row of samples packed side by side that cannot see each other, or per
//                rows_per_forward such rows), then one AdamW step
//                (learner/parallel/master_weights.h)
//
// On several devices (options.data_parallel.devices, learner/parallel/data_parallel.h) the step's
// forwards are shared out between the replicas (each to the one with the fewest tokens so far),
// whose gradients are summed: the same step as on one device, up to the order of float additions.
// With shard: parameters a replica with fewer forwards repeats the step's cheapest with a zero
// weight, so that every replica runs as many (each gathers the layers with all of them).
//
// The noise comes from the trainer's own generator (seeded): the same seed, data order and
// options give the same masks.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "common/status.h"
#include "learner/curriculum/sft_data.h"
#include "learner/parallel/data_parallel.h"
#include "learner/train/training_setup.h"
#include "model/qwen3.h"
#include "options/learner_options.h"

namespace dice {

// The optimizer (its lr set per step by the caller's schedule), memory, attention and device
// settings are TrainingOptions' (training_setup.h), shared with PolicyTrainer.
struct SftTrainerOptions : TrainingOptions {
  std::uint64_t seed = 1;
  // Pack samples side by side into rows of at most this many tokens (each sample on its own in
  // the attention mask: model/attention_masks.h, packed training layout); 0 = one sample per
  // forward. Default: 0
  std::int64_t pack_length = 0;
  // Rows run in one forward ([rows, length], padded to the longest): 1 suits a large model, whose
  // one row fills the GPU; a small model needs many, or kernel launches bound the step. Default: 1
  int rows_per_forward = 1;
};

struct SftStepStats {
  double loss = 0.0;  // the objective above, mean over the batch
  double grad_norm = 0.0;
  std::int64_t masked_tokens = 0;
  std::int64_t sequences = 0;
  std::int64_t forwards = 0;  // forwards run (packed or several rows each: fewer than sequences)
  int replicas = 1;           // devices the step ran on
  std::size_t buckets_overlapped = 0;  // gradient buckets summed during rank 0's backward
  // Model FLOPs of the step's forwards and backward (training_flops.h: each sequence at its own
  // length, padding and recomputation not counted)
  double model_flops = 0.0;
};

// One sample's noisy copy: x_t, x_0 (both padded to whole blocks), the masked positions and p.
struct SftNoised {
  std::vector<std::int64_t> x_t, x_0;
  std::vector<std::int64_t> masked;  // positions in x_t holding the mask instead of x_0's token
  double p = 0.0;
};
SftNoised sft_noise(const SftSample& sample, double t, std::int64_t block_size,
                    std::int64_t mask_token_id, std::mt19937_64& rng);

class SftTrainer {
 public:
  static Result<std::unique_ptr<SftTrainer>> create(Qwen3LM model, SftTrainerOptions options);

  // One optimizer step at learning rate `lr` on `batch`. Internal for a LibTorch failure.
  Result<SftStepStats> step(const std::vector<const SftSample*>& batch, double lr);

  Qwen3LM model() const { return model_; }

 private:
  SftTrainer(Qwen3LM model, SftTrainerOptions options);

  Qwen3LM model_;
  SftTrainerOptions options_;
  std::unique_ptr<DataParallel> replicas_;
  std::mt19937_64 rng_;
};

}  // namespace dice
