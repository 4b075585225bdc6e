// PolicyTrainer: one TraceRL policy update per RL step (REFERENCE sections 1 and 3).
//
// repeat loss.ppo_epochs times (DICE: once), each pass one optimizer step:
//   for each micro-batch of samples (options.optimizer.grad_accumulation of them per step):
//     one training-layout forward over every trace view of its samples
//     (learner/step/trace_layout.h), lm_head on the scored positions only, log-softmax at each
//     sample's sampling temperature, trace_token_loss, each sequence's sum over its response
//     length, averaged over the step's sequences; backward (gradients add up over micro-batches)
//   clip the global gradient norm, one AdamW step on float32 master weights
//   (learner/parallel/master_weights.h) at the warm-up's lr (warmup_lr: optimizer.warmup_steps)
//
// With loss.kl_reference phase_start the KL's reference log-probs are those of a frozen copy of
// the phase's starting weights (set_reference), scored once per update before the first pass
// with no gradient, on the first device.
//
// On several devices (options.data_parallel, learner/parallel/data_parallel.h) each optimizer
// step's micro-batches are shared out between the replicas (at least one each), whose gradients are
// summed: the objective's normaliser is the whole step's sequence count on every replica, so the
// sum is the one-device gradient, up to the order of float additions. With shard: parameters a
// replica with fewer micro-batches than another repeats the step's cheapest with a zero weight, so
// that every replica runs as many forwards (each gathers the layers with all of them).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "learner/parallel/data_parallel.h"
#include "learner/step/trace_layout.h"
#include "learner/train/training_setup.h"
#include "model/qwen3.h"
#include "options/learner_options.h"

namespace dice {

// The optimizer, memory, attention and device settings are TrainingOptions' (training_setup.h),
// shared with SftTrainer. The trained policy is the model's softmax at each sample's sampling
// temperature (TraceSample::temperature: its phase's) with the mask token banned, as the sampler
// draws; top-k and top-p truncation (off in DICE) are not reproduced.
struct PolicyTrainerOptions : TrainingOptions {
  PolicyLossOptions loss;
  TraceLayoutOptions layout;
  // Decoupled PPO for samples older than the weights (learner.async.stale importance): > 0 scores
  // every sample with the weights first (as loss.recompute_old_log_probs), clips the ratio against
  // those log-probs, and weights each token's term by min(exp(those - the sampler's), this cap).
  // 0: off. Default: 0
  double importance_cap = 0.0;
  // Run each sample's clean copy once beside all its trace views (Qwen3LM::hidden_training_views)
  // instead of once per view: the same log-probs and gradients for (1 + views) / (2 views) of the
  // tokens through the weights. Default: true
  bool share_clean_copy = true;
  // Time the update's parts (PolicyUpdateStats::*_seconds), synchronising the device around each:
  // for benches, it costs the overlap of host and device work. Default: false
  bool time_parts = false;
};

// The figures below are of the last pass over the samples (with loss.ppo_epochs > 1 its ratio
// and clip fraction show how far the earlier passes moved the policy from the sampler's).
struct PolicyUpdateStats {
  std::int64_t sequences = 0;      // samples with at least one scored token
  std::int64_t scored_tokens = 0;  // response tokens scored (every token once)
  std::int64_t forwards = 0;       // the last pass's training forwards (one per micro-batch)
  int optimizer_steps = 0;         // ppo_epochs x the mini-batches (ppo_mini_batches)
  double loss = 0.0;               // the objective the gradient is of (mean over sequences)
  double policy_loss = 0.0;        // its clipped-ratio part
  double kl = 0.0;                 // mean per-token KL estimate
  double mean_ratio = 0.0;         // mean new/old probability ratio (1 when on-policy)
  double clip_fraction = 0.0;      // tokens whose ratio left [1 - eps, 1 + eps]
  double grad_norm = 0.0;          // global norm before clipping (the last epoch's mean)
  double lr = 0.0;                 // of the last optimizer step (warmup_lr)
  // Share of the token positions the forwards ran that were padding: each micro-batch's rows
  // run at its longest sample's length, and samples are grouped longest first to keep it low.
  double padding_fraction = 0.0;
  // importance_cap > 0: the mean truncated importance weight over the scored tokens (1 when
  // every sample is from the weights trained), and the share of tokens the cap cut
  double importance_mean = 1.0;
  double importance_capped = 0.0;
  // Model FLOPs of every pass and of the recomputed log-probs (training_flops.h: recomputation
  // for activation checkpointing is not counted).
  double model_flops = 0.0;
  // With PolicyTrainerOptions::time_parts, seconds in each part of update(), all passes: the
  // log-probs recomputed first, the inputs' upload to the device, forward (with the loss),
  // backward, and the optimizer (clipping, AdamW on the masters, and with optimizer_on_cpu the
  // copies between host and device). 0 otherwise.
  double rescore_seconds = 0.0, upload_seconds = 0.0, forward_seconds = 0.0, backward_seconds = 0.0,
         optimizer_seconds = 0.0;
};

// The lr of the optimizer step that follows `steps_taken` steps of one AdamW: optimizer.lr * (k /
// warmup_steps) for the k-th step while k <= warmup_steps (k = steps_taken + 1), then lr.
double warmup_lr(const OptimizerOptions& optimizer, std::int64_t steps_taken);

// A frozen copy of `model` (the same config, dtype and device; no gradient, eval mode): the KL
// reference of loss.kl_reference phase_start. torch_failure()'s status when LibTorch fails
// (out_of_memory.h).
Result<Qwen3LM> frozen_copy(const Qwen3LM& model);

class PolicyTrainer {
 public:
  // Trains `model` in place (its parameters' device and dtype). InvalidArgument for bad options.
  static Result<std::unique_ptr<PolicyTrainer>> create(Qwen3LM model, PolicyTrainerOptions options);
  ~PolicyTrainer();
  PolicyTrainer(const PolicyTrainer&) = delete;
  PolicyTrainer& operator=(const PolicyTrainer&) = delete;

  // loss.ppo_epochs passes over `samples`, each loss.ppo_mini_batches optimizer steps on parts of
  // them in order (one step in all by default); with loss.recompute_old_log_probs the old
  // log-probs are first the model's own (log_probs()). InvalidArgument (naming the
  // sample) for a sample whose trace does not fit the options, unless `left_out` is given: such
  // samples are then skipped and listed there (index, why). On one device, an update that runs
  // out of memory before its first optimizer step runs again with its forwards cut finer
  // (memory_split()). Internal for a LibTorch failure, Unavailable (out_of_device_memory) when
  // even one sample a forward does not fit: the weights then hold the passes that completed, and
  // are unchanged when the first failed before its optimizer step. No samples: no step, zero
  // stats.
  Result<PolicyUpdateStats> update(const std::vector<TraceSample>& samples,
                                   std::vector<std::pair<std::size_t, Status>>* left_out = nullptr);

  // The objective of update()'s first pass on `samples` and its gradient, left in the model's
  // parameters' .grad (replacing what was there); no optimizer step. What a data-parallel
  // learner all-reduces before stepping, and what a gradient check compares with finite
  // differences of stats.loss. Errors as update(). grad_norm is the gradient's global norm.
  Result<PolicyUpdateStats> gradients(
      const std::vector<TraceSample>& samples,
      std::vector<std::pair<std::size_t, Status>>* left_out = nullptr);

  // The current policy's log-prob of every response token of `sample` given its trace (what the
  // update's ratio compares with the sampling log-prob), in response order; no gradient.
  // InvalidArgument as update().
  Result<std::vector<float>> log_probs(const TraceSample& sample);
  // log_probs() of each sample, `per_forward` samples a forward (the update's micro-batches,
  // where it recomputes the old log-probs): entry i is samples[i]'s, or why it has none.
  std::vector<Result<std::vector<float>>> log_probs(const std::vector<TraceSample>& samples,
                                                    std::int64_t per_forward);

  Qwen3LM model() const { return model_; }
  // Optimizer steps of this trainer's AdamW (a loaded optimizer state's included): where the lr
  // warm-up stands.
  std::int64_t steps_taken() const { return steps_; }

  // Whether the KL is against a frozen reference (loss.kl_reference phase_start, kl_beta > 0).
  bool uses_reference() const;
  // The frozen reference (frozen_copy of the phase's starting weights), on the model's device in
  // its dtype; no update changes it. Unset when the first update needs one: a frozen copy of the
  // weights as they are then.
  void set_reference(Qwen3LM reference) { reference_ = std::move(reference); }
  Qwen3LM reference() const { return reference_; }

  // The optimizer state for a resume (MasterWeights::save / load): saved from the first replica,
  // loaded into every one (which also sets every replica's weights to the saved masters).
  Status save_optimizer_state(const std::string& path) const;
  Status load_optimizer_state(const std::string& path);
  int replicas() const { return replicas_->size(); }
  // How many times finer than optimizer.grad_accumulation the update's forwards are cut: 1 until
  // an update runs out of device memory before its optimizer step; update() then releases the
  // cached memory, doubles this and runs again (one device; the same gradient, as micro-batches
  // only add up), and later updates keep it.
  int memory_split() const { return memory_split_; }

 private:
  struct Packed;    // one forward's rows and scored tokens (policy_trainer.cc)
  struct Prepared;  // a step's samples as micro-batches (policy_trainer.cc)
  struct Rescored;  // the samples with the learner's own old log-probs (policy_trainer.cc)

  PolicyTrainer(Qwen3LM model, PolicyTrainerOptions options);
  // The micro-batches an optimizer step is cut into: grad_accumulation (at least one per
  // replica), times memory_split_.
  std::int64_t micro_batches_wanted() const;
  // update() at the current memory_split_.
  Result<PolicyUpdateStats> update_once(const std::vector<TraceSample>& samples,
                                        std::vector<std::pair<std::size_t, Status>>* left_out);
  // As many samples a no-grad forward as the update's micro-batches hold (prepare()): forwards
  // of that size fit wherever the update's do.
  std::int64_t samples_per_forward(std::size_t samples) const;
  // `references`: empty, or per sample the KL reference's log-prob of each response token.
  Result<Prepared> prepare(const std::vector<TraceSample>& samples,
                           std::vector<std::pair<std::size_t, Status>>* left_out,
                           const std::vector<std::vector<float>>& references = {}) const;
  // The frozen reference's log-probs of each sample (empty when !uses_reference(); a sample that
  // does not fit gets none: prepare() names it). Internal when LibTorch fails.
  Result<std::vector<std::vector<float>>> reference_log_probs(
      const std::vector<TraceSample>& samples);
  // log_probs() under `scorer` (the policy's first replica, or the reference).
  std::vector<Result<std::vector<float>>> score(const std::vector<TraceSample>& samples,
                                                std::int64_t per_forward, Qwen3LM scorer);
  // zero_grad, then forward + backward of every micro-batch on the first replica: one pass's
  // gradient and figures (no sum over replicas; what gradients() reports).
  PolicyUpdateStats backward_pass(const Prepared& prepared);
  // One optimizer step on `prepared`: its micro-batches shared out between the replicas, the
  // gradients summed, every replica stepped. The figures summed over replicas; the norm.
  // ... at learning rate `lr`.
  Result<std::pair<PolicyUpdateStats, double>> step_on_replicas(const Prepared& prepared,
                                                                double lr);
  // update()'s steps, in order. rescore (its `failed` set when a forward failed in LibTorch): with
  // loss.recompute_old_log_probs or importance_cap, the samples with their old log-probs the
  // model's own (a sample whose trace does not fit keeps its own: prepare() names it) and, with
  // importance_cap, each token's truncated weight pi_learner / pi_sampler; what it cost.
  Rescored rescore(const std::vector<TraceSample>& samples);
  // The parts of each pass, one optimizer step each: `whole` with loss.ppo_mini_batches 1, else
  // the samples that fit (none of `left_out`) split in order, each prepared as its own objective
  // (a mean over its sequences).
  Result<std::vector<Prepared>> mini_batches(
      Prepared whole, const std::vector<TraceSample>& input,
      const std::vector<std::pair<std::size_t, Status>>* left_out,
      const std::vector<std::vector<float>>& references) const;
  // loss.ppo_epochs passes over `parts`: the last pass's figures; every pass's seconds and model
  // FLOPs added to `*times`.
  Result<PolicyUpdateStats> run_epochs(const std::vector<Prepared>& parts,
                                       PolicyUpdateStats* times);
  // `references`: empty, or per layout its sample's reference log-probs (by response index).
  Packed pack(const std::vector<const TraceLayout*>& layouts, const std::vector<double>& advantages,
              double sequence_weight,
              const std::vector<const std::vector<float>*>& references = {}) const;
  // The policy's log-probs [N] at the packed scored tokens (differentiable unless under no-grad);
  // counts the forward's model FLOPs (forward_flops_) and, with time_parts, the upload's seconds.
  // `scorer`: another model on the first device to score with (the frozen reference).
  at::Tensor policy_log_probs(const Packed& packed, PolicyUpdateStats* stats = nullptr,
                              int rank = 0, Qwen3LM scorer = nullptr);
  // With time_parts: the device synchronised, then seconds since `*mark`, which moves to now.
  // Replicas other than the first are not timed (their threads overlap the first's).
  double lap(std::chrono::steady_clock::time_point* mark, int rank = 0) const;
  // Forward + backward of one micro-batch on replica `rank`; adds to `stats` (sums; update()
  // averages).
  void accumulate(const Packed& packed, PolicyUpdateStats& stats, int rank = 0);
  // A zero-weighted forward and backward of `packed` (shard: parameters: keeps a rank with fewer
  // micro-batches in step with the others; data_parallel.h's rank_passes). Adds nothing.
  void accumulate_padding(const Packed& packed, int rank);

  Qwen3LM model_;
  PolicyTrainerOptions options_;
  std::unique_ptr<DataParallel> replicas_;
  std::int64_t steps_ = 0;
  int memory_split_ = 1;
  double forward_flops_ = 0.0;  // of the no-grad forwards log_probs() ran
  Qwen3LM reference_{nullptr};  // the KL's frozen reference (kl_reference phase_start)
};

}  // namespace dice
