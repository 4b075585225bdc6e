// What the run loop needs of a policy update, without LibTorch: the result record and the
// callback type. make_policy_updater() (learner/run/policy_updater.h) builds the real one on the
// model.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "learner/step/trace_layout.h"

namespace dice {
namespace transport {
class WorkDispatcher;
}
namespace rewardlog {
class RewardLogWriter;
}

// What one policy update did.
struct PolicyUpdate {
  bool ran = false;                  // false: no sample carried a signal, the weights are unchanged
  std::uint64_t policy_version = 0;  // the version the learner holds after the update
  std::string checkpoint_dir;        // the new weights for rollout workers; empty: not pushed
  std::int64_t sequences = 0;
  std::int64_t scored_tokens = 0;
  double loss = 0.0;
  double kl = 0.0;
  double grad_norm = 0.0;
  double clip_fraction = 0.0;
  double mean_ratio = 0.0;
  int optimizer_steps = 0;  // ppo_epochs x ppo_mini_batches (learner.loss) when it ran
  double seconds = 0.0;
  // learner.async.stale importance: the mean truncated importance weight over the scored tokens
  // and the share the cap cut (1 and 0 otherwise)
  double importance_mean = 1.0;
  double importance_capped = 0.0;
  double padding_fraction = 0.0;  // of the update forwards' token positions (PolicyUpdateStats)
  double lr = 0.0;                // of its last optimizer step (optimizer.warmup_steps)
  // learner.min_mixed_samples: samples of mixed groups that went into this update from earlier
  // steps (carried_in), and those this step leaves for a later update (carried_out).
  std::int64_t carried_in = 0;
  std::int64_t carried_out = 0;
};

// Runs the update for global step `step` on the step's samples; `version` is the version held
// before it. An error ends the run (a learner that silently stops learning is worse).
using PolicyUpdater = std::function<Result<PolicyUpdate>(
    std::vector<TraceSample> samples, std::uint64_t step, std::uint64_t version)>;

// Supervised fine-tuning as a curriculum phase (CurriculumPhase type sft): trains the weights
// the learner holds (policy `version`) on `data_file` for `epochs` and returns them as the next
// version, checkpointed (ran false: nothing trained, e.g. stopped before the first step). Its
// metrics go to `log`; it ends after the step in hand once `stop_requested` says so.
using SftStage = std::function<Result<PolicyUpdate>(
    const std::string& phase, const std::string& data_file, int epochs, std::uint64_t version,
    rewardlog::RewardLogWriter& log, const std::function<bool()>& stop_requested)>;

// Writes the checkpoint that ends phase `phase`: the weights of policy `version`, from
// `weights_dir` (empty: the initial policy) or from the learner's model when it has newer ones;
// a folder retention never deletes. Returns the folder.
using PhaseCheckpointer = std::function<Result<std::string>(
    const std::string& phase, std::uint64_t version, const std::string& weights_dir)>;

// Called as an rl phase's steps begin: the policy stages take the weights the phase starts with
// as the frozen KL reference (learner.loss.kl_reference phase_start; a no-op otherwise).
// `resumed`: a resumed run goes on inside the phase, so the weights held are not its starting
// ones; those are then read from the closing checkpoint of `previous`, the phase before it in the
// run's plan ("": none, the initial policy).
using PhaseStarter =
    std::function<Status(const std::string& phase, const std::string& previous, bool resumed)>;

// Writes what a resume needs of the learner's weights into resume folder `dir`
// (learner/resume/resume_store.h): the model in the Hugging Face layout (model/) and, when a
// trainer exists, the optimizer state (optimizer.pt).
using StateSaver = std::function<Status(const std::string& dir)>;

// The weights a resumed run holds.
struct ResumedWeights {
  std::uint64_t policy_version = 0;
  std::string weights_dir;  // its checkpoint folder; "": the initial policy
};

// Takes back what a StateSaver wrote into `dir` (empty: nothing was saved, the initial policy
// stays): the model's weights and the optimizer state, as policy `version`. Checkpoint folders of
// later versions (updates the restart undoes) are deleted. When `workers_may_be_ahead` (weights
// were pushed after the resume folder was written: state_interval_steps above 1), rollout workers
// may hold such a version, so the weights then take the next number after the newest of them and
// every worker loads them. The folder of the version held is written again when missing.
using StateLoader = std::function<Result<ResumedWeights>(
    const std::string& dir, std::uint64_t version, bool workers_may_be_ahead)>;

// Tells the workers about a new version (learner/push/nccl_weight_pusher.h, or a checkpoint folder
// push when empty). An error ends the run.
using WeightsPusher =
    std::function<Status(const PolicyUpdate& update, transport::WorkDispatcher& dispatcher)>;

}  // namespace dice
