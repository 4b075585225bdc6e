// Options of the learner: the TraceRL policy update (PPO clip + k3 KL), AdamW, batch shape,
// staleness bound, checkpoints, and the SFT stage. Defaults are DICE's released settings
// (docs/REFERENCE section 1). Each field is documented once, in visit_fields; YAML keys equal
// field names (see common/config/field_checks.h for the mechanism).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"

namespace dice {

// How the KL penalty (against PolicyLossOptions::kl_reference) is estimated per token.
enum class KlEstimator { kK1, kK2, kK3 };
inline constexpr config::EnumName<KlEstimator> kKlEstimatorNames[] = {
    {KlEstimator::kK1, "k1"}, {KlEstimator::kK2, "k2"}, {KlEstimator::kK3, "k3"}};
constexpr const auto& enum_names(KlEstimator) {
  return kKlEstimatorNames;
}

enum class TrainMode { kRl, kSft };
inline constexpr config::EnumName<TrainMode> kTrainModeNames[] = {{TrainMode::kRl, "rl"},
                                                                  {TrainMode::kSft, "sft"}};
constexpr const auto& enum_names(TrainMode) {
  return kTrainModeNames;
}

// Parameter / compute precision of the trained model.
enum class TrainDtype { kBf16, kFp32 };
inline constexpr config::EnumName<TrainDtype> kTrainDtypeNames[] = {{TrainDtype::kBf16, "bf16"},
                                                                    {TrainDtype::kFp32, "fp32"}};
constexpr const auto& enum_names(TrainDtype) {
  return kTrainDtypeNames;
}

// What the asynchronous mode (AsyncOptions) does with a sample older than the learner's weights.
enum class StaleSamples { kDrop, kImportance };
inline constexpr config::EnumName<StaleSamples> kStaleSamplesNames[] = {
    {StaleSamples::kDrop, "drop"}, {StaleSamples::kImportance, "importance"}};
constexpr const auto& enum_names(StaleSamples) {
  return kStaleSamplesNames;
}

// Which policy the KL penalty pulls towards: the one that sampled the step (DICE's), or a frozen
// copy of the weights the rl phase started with.
enum class KlReference { kSampling, kPhaseStart };
inline constexpr config::EnumName<KlReference> kKlReferenceNames[] = {
    {KlReference::kSampling, "sampling"}, {KlReference::kPhaseStart, "phase_start"}};
constexpr const auto& enum_names(KlReference) {
  return kKlReferenceNames;
}

// What a verdict the reward service could not reach (internalError, sandboxUnavailable, after
// the worker's one retry on another slot) counts for: the candidate's failure, or nothing.
enum class InternalErrorScoring { kFailure, kUnscored };
inline constexpr config::EnumName<InternalErrorScoring> kInternalErrorScoringNames[] = {
    {InternalErrorScoring::kFailure, "failure"}, {InternalErrorScoring::kUnscored, "unscored"}};
constexpr const auto& enum_names(InternalErrorScoring) {
  return kInternalErrorScoringNames;
}

// The TraceRL objective: PPO-clipped ratio times the group-normalised advantage, plus beta * KL.
struct PolicyLossOptions {
  double clip_eps = 0.2;
  double kl_beta = 0.01;
  KlEstimator kl_estimator = KlEstimator::kK3;
  KlReference kl_reference = KlReference::kSampling;
  int trace_shrink = 1;
  bool drop_constant_groups = true;
  int ppo_epochs = 1;
  int ppo_mini_batches = 1;
  bool recompute_old_log_probs = false;

  template <class V>
  void visit_fields(V& v) {
    v.field("clip_eps", clip_eps,
            "PPO ratio clip: ratios outside [1-eps, 1+eps] get no gradient. Default: 0.2",
            config::greater_than(0), config::at_most(1));
    v.field("kl_beta", kl_beta,
            "Weight of the KL penalty (against kl_reference); 0 turns it off. Default: 0.01",
            config::at_least(0));
    v.field("kl_estimator", kl_estimator, "Per-token KL estimator. Default: k3");
    v.field("kl_reference", kl_reference,
            "What the KL penalty is against. sampling: the policy that sampled the step (DICE's; "
            "with one PPO epoch the ratio starts at 1, where k3's gradient is zero, so the term "
            "only bounds later epochs). phase_start: a frozen copy of the weights the rl phase "
            "started with (after SFT: the SFT model), scored once per sample before the update "
            "(one more no-grad forward, and one more copy of the weights on the learner's first "
            "GPU), so the penalty ties RL to where it began. Default: sampling");
    v.field("trace_shrink", trace_shrink,
            "Consecutive denoising steps scored together in one TraceRL term (DICE: 1). Default: 1",
            config::at_least(1));
    v.field(
        "drop_constant_groups", drop_constant_groups,
        "Skip groups whose rewards are all equal: their z-scored advantage is zero. Default: true");
    v.field("ppo_epochs", ppo_epochs,
            "Optimizer steps on each RL step's samples (passes over all of them). Every pass's "
            "ratio and clip (and KL, under kl_reference sampling) are against the policy that "
            "sampled, so after the first the clip bounds how far the step moves; more learning per "
            "judged candidate where the reward is the expensive part. DICE: 1. Default: 1",
            config::at_least(1), config::at_most(64));
    v.field("ppo_mini_batches", ppo_mini_batches,
            "Mini-batches per epoch: the step's samples (in task, sample order) split into this "
            "many parts, one optimizer step on each, each part's objective its own mean; so an "
            "RL step takes ppo_epochs x ppo_mini_batches optimizer steps (capped by the samples). "
            "Default: 1",
            config::at_least(1), config::at_most(1024));
    v.field("recompute_old_log_probs", recompute_old_log_probs,
            "Before the update, score every sample with the learner's weights and use those "
            "log-probs as the old ones in the ratio and the KL, instead of the sampler's: removes "
            "the numeric drift between the sampler's layout and the learner's (docs/BENCHMARKS.md "
            "\"bf16 log-prob gap\": ~2 % per token in bf16 on the H200) at one no-grad forward "
            "pass. In the asynchronous mode (learner.async) the ratio is then against the "
            "learner's weights rather than the ones that sampled. Default: false");
  }
};

// The asynchronous mode: rollout runs ahead of the learner instead of waiting for each update
// (DICE's loop is synchronous: max_ahead 0). docs/ASYNC.md.
struct AsyncOptions {
  int max_ahead = 0;
  StaleSamples stale = StaleSamples::kImportance;
  double importance_cap = 1.0;

  template <class V>
  void visit_fields(V& v) {
    v.field("max_ahead", max_ahead,
            "RL steps whose rollouts may start before the step in front has been trained on: "
            "rollout runs ahead of the learner by at most this many policy versions, so a "
            "sample is at most this many versions older than the weights it trains. 0: DICE's "
            "synchronous loop (every step samples with the weights of the update before it). "
            "Default: 0",
            config::at_least(0), config::at_most(16));
    v.field("stale", stale,
            "What an update does with samples older than its weights. drop: those more than "
            "learner.max_staleness versions old are dropped (counted as stale), the rest trained "
            "as the synchronous loop trains, the ratio against the log-probs that sampled. "
            "importance: none dropped; decoupled PPO: the clip is against the learner's weights "
            "before the update (one no-grad forward per sample) and each token's term is "
            "weighted by min(pi_learner / pi_sampler, importance_cap). Default: importance");
    v.field("importance_cap", importance_cap,
            "Truncation of the importance weight of stale: importance (V-trace's rho-bar). "
            "Default: 1",
            config::greater_than(0), config::at_most(100));
  }
};

// What each of the learner's GPUs holds of the model and its optimizer
// (learner/parallel/shard_memory.h has the bytes): all of it (replica), 1/N of the float32
// masters and AdamW moments (optimizer: ZeRO stage 1/2, learner/parallel/optimizer_shard.h), or
// that and 1/N of the decoder layers' weights as well (parameters: ZeRO stage 3,
// learner/parallel/parameter_shards.h).
enum class ShardMode { kReplica, kOptimizer, kParameters };
inline constexpr config::EnumName<ShardMode> kShardModeNames[] = {
    {ShardMode::kReplica, "replica"},
    {ShardMode::kOptimizer, "optimizer"},
    {ShardMode::kParameters, "parameters"}};
constexpr const auto& enum_names(ShardMode) {
  return kShardModeNames;
}

// Data-parallel training over the learner's GPUs (learner/parallel/data_parallel.h): one replica
// per GPU, gradients summed over NCCL in buckets while the backward runs.
struct DataParallelSettings {
  int devices = 0;
  int bucket_mb = 25;
  double timeout_seconds = 600;
  ShardMode shard = ShardMode::kReplica;

  template <class V>
  void visit_fields(V& v) {
    v.field("devices", devices,
            "GPUs the learner trains on, one model replica each: the first N it sees; 0 = every "
            "GPU it sees (under dice-cluster, the node's gpus.learner). SFT and the RL update use "
            "them all; the first holds the weights that are checkpointed and pushed. Default: 0",
            config::at_least(0), config::at_most(64));
    v.field("bucket_mb", bucket_mb,
            "Gradient bucket size in MiB: a bucket is summed across GPUs (shard: replica) or "
            "reduce-scattered into each GPU's share (shard: optimizer) as soon as the backward "
            "has produced it; with shard: parameters only the weights outside the decoder "
            "layers go in buckets (a layer's gradients are reduce-scattered as one). Default: 25",
            config::at_least(1), config::at_most(1024));
    v.field("timeout_seconds", timeout_seconds,
            "How long a GPU waits for the others in one collective (a gradient sum, "
            "reduce-scatter or all-gather) before the step fails (a dead or stuck peer). "
            "Default: 600",
            config::greater_than(0));
    v.field("shard", shard,
            "What each GPU holds of the model and its optimizer. replica: every GPU the float32 "
            "master weights and both AdamW moments of every weight (16 bytes a bf16 parameter "
            "with its gradient); gradients are all-reduced. optimizer: GPU r of N holds chunk r "
            "of every gradient bucket's masters and moments (ZeRO stage 1/2: 4 + 12/N bytes a "
            "parameter); gradients are reduce-scattered, the updated weights all-gathered. "
            "parameters: as optimizer, and GPU r also keeps only chunk r of each decoder layer's "
            "bf16 weights (ZeRO stage 3: 16/N bytes a layer parameter, its gradient chunk "
            "included, plus one layer's whole weights while it runs; embeddings, final norm and "
            "LM head as in optimizer); a layer's weights are all-gathered before its forward "
            "and its backward, freed after, and its gradients reduce-scattered; every GPU runs "
            "as many forwards a step (one with fewer repeats its cheapest at zero weight). Needs "
            "learner.activation_checkpointing: true (the backward gathers each layer again to "
            "recompute it). Between updates the first GPU holds the whole weights again, for "
            "the checkpoints, the weight push and the learner's own forwards. The same step in "
            "every mode; with optimizer or parameters the resume state is one file per GPU "
            "(optimizer.pt, optimizer.pt.rank<r>, parameters' holding each GPU's layer chunks "
            "too) and resumes only on as many GPUs in the same mode. Default: replica");
  }
};

// AdamW with global grad-norm clipping.
struct OptimizerOptions {
  double lr = 1e-6;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double grad_clip_norm = 1.0;
  int grad_accumulation = 32;
  int warmup_steps = 0;

  template <class V>
  void visit_fields(V& v) {
    v.field("lr", lr, "AdamW learning rate. Default: 1e-6", config::greater_than(0));
    v.field("beta1", beta1, "AdamW first-moment decay. Default: 0.9", config::in_range(0, 1));
    v.field("beta2", beta2, "AdamW second-moment decay. Default: 0.999", config::in_range(0, 1));
    v.field("eps", eps, "AdamW denominator epsilon. Default: 1e-8", config::greater_than(0));
    v.field("weight_decay", weight_decay, "Decoupled weight decay. Default: 0",
            config::at_least(0));
    v.field("grad_clip_norm", grad_clip_norm,
            "Clip the global gradient norm to this; 0 = no clipping. Default: 1",
            config::at_least(0));
    v.field("grad_accumulation", grad_accumulation,
            "Micro-batches whose gradients are summed before one optimizer step: a step's "
            "samples are split into this many forwards (each forward holds every trace view of "
            "its samples). Default: 32",
            config::at_least(1));
    v.field("warmup_steps", warmup_steps,
            "RL lr warm-up: the lr of the k-th optimizer step of the RL optimizer is lr * k / N "
            "for k <= N (N = this), then lr. The count is that of one AdamW: it starts at the "
            "run's first update and again after every sft phase (which makes the RL optimizer "
            "anew), not at each rl phase, because a fresh AdamW's first steps move every weight "
            "by about lr whatever the gradient, while one that has seen steps has moments that "
            "scale them. A resume continues the count (AdamW's step count is in optimizer.pt). "
            "SFT has its own warm-up (sft.warmup_ratio). 0: the full lr from the first step. "
            "Default: 0",
            config::at_least(0));
  }
};

struct CheckpointOptions {
  std::string dir = "runs/checkpoints";
  int interval_steps = 10;
  int keep_last = 0;
  int state_interval_steps = 1;

  template <class V>
  void visit_fields(V& v) {
    v.field("dir", dir,
            "Folder for checkpoints (Hugging Face layout, one sub-folder per step). Default: "
            "runs/checkpoints",
            config::is_path(), config::non_empty());
    v.field("interval_steps", interval_steps,
            "Save every this many policy updates (and at the end of each phase). Default: 10",
            config::at_least(1));
    v.field("keep_last", keep_last, "Keep only the newest N checkpoints; 0 keeps all. Default: 0",
            config::at_least(0));
    v.field("state_interval_steps", state_interval_steps,
            "Write the run's resume folder (<dir>/<run id>/resume: weights, optimizer state, "
            "curriculum position; docs/RESUME.md) after every this many steps of an rl phase, and "
            "after every phase. A restart repeats at most this many steps. Default: 1",
            config::at_least(1));
  }
};

// Supervised fine-tuning on PyTorch->CUDA pairs before RL (DICE: full fine-tune, constant lr after
// warm-up, packed sequences).
struct SftOptions {
  std::string data_file;
  double lr = 1e-5;
  double warmup_ratio = 0.03;
  int epochs = 3;
  int max_length = 6144;
  int batch_size = 64;
  bool packed = true;
  int rows_per_forward = 1;

  template <class V>
  void visit_fields(V& v) {
    v.field("data_file", data_file, "SFT data (JSON); needed only when mode is sft. Default: empty",
            config::is_path());
    v.field("lr", lr, "Learning rate after warm-up (held constant). Default: 1e-5",
            config::greater_than(0));
    v.field("warmup_ratio", warmup_ratio,
            "Fraction of all steps spent warming the lr up linearly. Default: 0.03",
            config::in_range(0, 1));
    v.field("epochs", epochs, "Passes over the data. Default: 3", config::at_least(1));
    v.field("max_length", max_length,
            "Longest sequence in tokens; longer samples are dropped. Default: 6144",
            config::at_least(1));
    v.field("batch_size", batch_size,
            "Samples per optimizer step (one forward each; gradients add up). Default: 64",
            config::at_least(1));
    v.field("packed", packed,
            "Pack a step's samples side by side into rows of up to max_length tokens (each "
            "sample still sees only itself): fewer, fuller forwards. Default: true");
    v.field("rows_per_forward", rows_per_forward,
            "Rows (packed, or one sample each) run in one forward, padded to the longest: 1 "
            "suits a large model, whose one row fills the GPU; a small one needs many, or "
            "kernel launches bound the step (configs/tiny.yaml). Default: 1",
            config::at_least(1));
  }
};

struct LearnerOptions {
  TrainMode mode = TrainMode::kRl;
  bool update_policy = true;
  std::vector<std::string> phases;
  std::string init_checkpoint;
  int tasks_per_step = 64;
  int group_size = 16;
  int max_staleness = 1;
  int min_mixed_samples = 0;
  TrainDtype dtype = TrainDtype::kBf16;
  bool activation_checkpointing = true;
  std::int64_t attention_tile = 0;
  bool optimizer_on_cpu = false;
  std::uint64_t seed = 0;
  double group_timeout_seconds = 3600;
  double drain_timeout_seconds = 600;
  InternalErrorScoring internal_errors = InternalErrorScoring::kFailure;
  PolicyLossOptions loss;
  OptimizerOptions optimizer;
  CheckpointOptions checkpoint;
  SftOptions sft;
  AsyncOptions async;
  DataParallelSettings data_parallel;

  template <class V>
  void visit_fields(V& v) {
    v.field("mode", mode,
            "rl: BiC-RL over the curriculum; sft: supervised fine-tuning. Default: rl");
    v.field("update_policy", update_policy,
            "Run the TraceRL update after every step and push the new weights to rollout "
            "workers; false: an evaluation-only run (rollouts, verdicts and advantages are "
            "logged, the weights stay at policy version 0). Default: true");
    v.field(
        "phases", phases,
        "Curriculum phases to run, by name, in curriculum order; empty runs them all. Default: []");
    v.field("init_checkpoint", init_checkpoint,
            "Weights to start from (an SFT or phase-1 checkpoint); rollout workers sample "
            "them too until the first push; empty = rollout.model_path. Default: empty",
            config::is_path());
    v.field("tasks_per_step", tasks_per_step,
            "Tasks per policy update, unless the curriculum phase sets its own. Default: 64",
            config::at_least(1));
    v.field("group_size", group_size,
            "Samples per task (one group; advantages are z-scored within it), unless the phase "
            "sets its own. Default: 16",
            config::at_least(2));
    v.field("max_staleness", max_staleness,
            "Drop samples produced by weights more than this many policy versions old; 0 = fully "
            "on-policy. Default: 1",
            config::at_least(0));
    v.field("min_mixed_samples", min_mixed_samples,
            "Fewest samples an RL update trains on: the samples of a step's groups with mixed "
            "rewards (the only ones with a gradient) are carried to the next step while fewer "
            "than this many have been gathered, and that step's update trains on all of them; no "
            "update runs meanwhile, so the carried samples are still of the policy that trains "
            "on them (on-policy). The last step of a phase trains on what it has; a resume "
            "loses the samples carried at the resume point. The step line says how many are "
            "carried (carried_samples). 0: every step updates on what it has (DICE's). "
            "Default: 0",
            config::at_least(0));
    v.field("dtype", dtype, "Training precision. Default: bf16");
    v.field("activation_checkpointing", activation_checkpointing,
            "Keep one hidden state per layer in the update's forward and recompute the rest in "
            "backward: far less GPU memory for about a third more compute. Default: true");
    v.field("attention_tile", attention_tile,
            "Queries per tile of the training forwards' attention: each tile reads only the "
            "keys its queries may see (the block-causal and noisy-view masks hide most), so "
            "attention costs about the visible pairs instead of the whole grid; the same "
            "results. Rounded up to whole blocks; 0 = one dense attention. Off by default: on "
            "the H200 the tiles' extra launches cost more than the skipped work saves "
            "(2026-12-05; docs/BENCHMARKS.md, \"Learner on the H200 ... the tiles measured\"). "
            "Default: 0",
            config::at_least(0));
    v.field("optimizer_on_cpu", optimizer_on_cpu,
            "Keep the fp32 master weights and AdamW's moments in host memory and step them on "
            "the CPU: 12 bytes per parameter off the GPU (48 GB for SDAR-4B), for a learner "
            "sharing one GPU with a rollout worker. Default: false");
    v.field("seed", seed,
            "Seed for task order ties, noise and dropout; 0 = draw one at start. Rollout "
            "workers seed their samplers from it and their worker index (0: seed 0 plus the "
            "index). Default: 0");
    v.field("group_timeout_seconds", group_timeout_seconds,
            "A task group not fully sampled and judged this long after its rollout request is "
            "skipped (logged; its verdicts so far are kept with advantage 0), so a lost worker "
            "never hangs the run. Default: 3600",
            config::greater_than(0));
    v.field("drain_timeout_seconds", drain_timeout_seconds,
            "After SIGTERM, how long the learner waits for work in flight before it writes what "
            "it has and exits. Default: 600",
            config::at_least(0));
    v.field("internal_errors", internal_errors,
            "What a verdict the reward service could not reach counts for (internalError or "
            "sandboxUnavailable: a fault of ours, which the reward worker has already retried "
            "once on another GPU slot). failure: reward 0 in its group, as any failed "
            "candidate, so that no fault is a free pass a candidate could provoke. unscored: "
            "logged but left out of its group's z-scores and the update (the behaviour before "
            "2026-12-06; for a reward service known to fail honest candidates). Either way the "
            "step line, the StepRecord and dice-dash show the share (internal_error_share). "
            "Default: failure");
    v.field("loss", loss, "TraceRL policy loss.");
    v.field("optimizer", optimizer, "AdamW.");
    v.field("checkpoint", checkpoint, "Checkpoint saving.");
    v.field("sft", sft, "Supervised fine-tuning stage (mode: sft).");
    v.field("async", async, "The asynchronous mode: rollout ahead of the learner.");
    v.field("data_parallel", data_parallel, "Training on several GPUs (data-parallel).");
  }

  void validate(config::Checker& c) const {
    for (std::size_t i = 0; i < phases.size(); ++i) {
      for (std::size_t j = 0; j < i; ++j) {
        if (phases[i] == phases[j])
          c.error("phases[" + std::to_string(i) + "]", "phase '" + phases[i] + "' listed twice");
      }
    }
    if (mode == TrainMode::kSft && sft.data_file.empty())
      c.error("sft.data_file", "required when mode is sft");
    // Sharded parameters free a layer's weights after its forward: only the recomputation that
    // activation checkpointing does brings them back for the backward.
    if (data_parallel.shard == ShardMode::kParameters && !activation_checkpointing)
      c.error("data_parallel.shard",
              "parameters needs learner.activation_checkpointing: true (each layer's weights are "
              "gathered again to recompute it in the backward); turn it on or use shard: "
              "optimizer");
    // A step ahead samples with the weights before the update in front of it: at least one
    // version old when it is trained.
    if (async.max_ahead > 0 && async.stale == StaleSamples::kDrop && max_staleness == 0)
      c.error("async.stale",
              "drop with max_staleness 0 drops every sample a step ahead makes; raise "
              "max_staleness to async.max_ahead, use stale: importance, or set max_ahead 0");
  }
};

}  // namespace dice
