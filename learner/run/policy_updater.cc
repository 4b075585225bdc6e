#include "learner/run/policy_updater.h"

#include <ATen/ATen.h>

#include <algorithm>

#include <chrono>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <memory>
#include <optional>

#include "common/disk_space.h"
#include "common/durable_file.h"
#include "common/log.h"
#include "common/remove_tree.h"
#include "learner/push/nccl_weight_pusher.h"
#include "learner/push/weight_sync_plan.h"
#include "learner/train/device_cache.h"
#include "learner/train/policy_checkpoint.h"
#include "learner/train/policy_trainer.h"
#include "learner/train/sft_run.h"
#include "model/checkpoint/checkpoint.h"
#include "model/torch_compat.h"
#include "model/weights.h"

namespace dice {
namespace {

// State shared by the calls of one run's updater.
struct Updater {
  Qwen3LM model = nullptr;  // the learner's weights, trained in place
  PolicyTrainerOptions trainer_options;
  std::unique_ptr<PolicyTrainer> trainer;  // made when an update needs it (an sft phase drops it)
  // The frozen KL reference of the rl phase in progress (loss.kl_reference phase_start), given to
  // every trainer made during it; null otherwise.
  Qwen3LM reference{nullptr};
  const DiceConfig* config = nullptr;  // the run's (outlives the updater)
  std::string source_dir;              // the initial policy's folder (side files come from there)
  std::string base_dir;                // <checkpoint.dir>/<run id>
  CheckpointOptions checkpoint;
  std::deque<std::uint64_t> recent;     // newest last: pushed versions not kept for the interval
  std::deque<std::uint64_t> permanent;  // interval checkpoints, newest last

  std::string dir_of(std::uint64_t version) const {
    return base_dir + "/policy-v" + std::to_string(version);
  }

  // run.min_free_disk_mb: what each checkpoint must leave free on its disk.
  std::uint64_t min_free_bytes() const {
    return static_cast<std::uint64_t>(config->run.min_free_disk_mb) * kBytesPerMiB;
  }

  Status save(std::uint64_t version) {
    return save_policy_checkpoint(*model, source_dir, dir_of(version), min_free_bytes());
  }

  // A trainer on the weights as they are (its masters and a fresh AdamW), with the phase's KL
  // reference.
  Status make_trainer() {
    DICE_ASSIGN_OR_RETURN(trainer, PolicyTrainer::create(model, trainer_options));
    if (reference) trainer->set_reference(reference);
    return Status::ok_status();
  }

  // The phase's starting weights become the KL reference (see PhaseStarter): a frozen copy of the
  // weights held, or after a resume inside the phase the previous phase's closing checkpoint (the
  // initial policy for the first phase).
  Status start_phase(const std::string& phase, const std::string& previous, bool resumed) {
    if (trainer_options.loss.kl_reference != KlReference::kPhaseStart ||
        trainer_options.loss.kl_beta <= 0) {
      return Status::ok_status();
    }
    reference = nullptr;  // the last phase's copy is freed before the new one is made
    if (trainer) trainer->set_reference(nullptr);
    std::string from = "the weights held";
    if (resumed) {
      from = previous.empty() ? source_dir : base_dir + "/phase-" + previous;
      const at::Tensor any = model->parameters().front();
      auto loaded =
          load_qwen3_lm(from, c10::TensorOptions().dtype(any.scalar_type()).device(any.device()));
      if (!loaded.ok()) {
        return loaded.status().with_context("KL reference of resumed phase " + phase);
      }
      DICE_ASSIGN_OR_RETURN(reference, frozen_copy(*loaded));
    } else {
      DICE_ASSIGN_OR_RETURN(reference, frozen_copy(model));
    }
    if (trainer) trainer->set_reference(reference);
    DICE_LOG(Info) << "KL reference: the phase's starting weights" << kv("phase", phase)
                   << kv("from", from) << kv("kl_beta", trainer_options.loss.kl_beta);
    return Status::ok_status();
  }

  // Retention (see the header); a failed delete is logged, never fatal.
  void prune(std::uint64_t version) {
    const auto interval = static_cast<std::uint64_t>(checkpoint.interval_steps);
    (version % interval == 0 ? permanent : recent).push_back(version);
    auto drop = [&](std::uint64_t v) {
      Status removed = remove_tree(dir_of(v));
      if (!removed.ok()) {
        DICE_LOG(Warn) << "cannot delete an old checkpoint" << kv("error", removed.to_string());
      }
    };
    while (recent.size() > 2 || (!recent.empty() && recent.front() + 2 <= version)) {
      drop(recent.front());
      recent.pop_front();
    }
    if (checkpoint.keep_last > 0) {
      while (permanent.size() > static_cast<std::size_t>(checkpoint.keep_last) &&
             permanent.front() + 2 <= version) {
        drop(permanent.front());
        permanent.pop_front();
      }
    }
  }

  // One TraceRL step on `samples` at policy `version`; when it ran, the new version is saved and
  // old checkpoints pruned.
  Result<PolicyUpdate> update(const std::vector<TraceSample>& samples, std::uint64_t step,
                              std::uint64_t version) {
    const auto started = std::chrono::steady_clock::now();
    PolicyUpdate out;
    out.policy_version = version;
    // A candidate whose trace does not fit the model (a broken or foreign rollout worker) is
    // left out, named in the log, rather than failing the whole step.
    std::vector<std::pair<std::size_t, Status>> left_out;
    if (!trainer) DICE_RETURN_IF_ERROR(make_trainer());  // first update, or first after sft
    DICE_ASSIGN_OR_RETURN(PolicyUpdateStats stats, trainer->update(samples, &left_out));
    const c10::Device home = model->parameters().front().device();
    if (home.is_cuda()) release_learner_cache(home.index(), "update");
    for (const auto& [index, why] : left_out) {
      DICE_LOG(Warn) << "sample left out of the update: its trace does not fit" << kv("step", step)
                     << kv("sample", index) << kv("error", why.to_string());
    }
    if (stats.sequences == 0) return out;  // nothing to learn from: no step, no push
    out.ran = true;
    out.policy_version = version + 1;
    out.sequences = stats.sequences;
    out.scored_tokens = stats.scored_tokens;
    out.loss = stats.loss;
    out.kl = stats.kl;
    out.grad_norm = stats.grad_norm;
    out.clip_fraction = stats.clip_fraction;
    out.mean_ratio = stats.mean_ratio;
    out.importance_mean = stats.importance_mean;
    out.importance_capped = stats.importance_capped;
    out.padding_fraction = stats.padding_fraction;
    out.optimizer_steps = stats.optimizer_steps;
    out.lr = stats.lr;
    DICE_RETURN_IF_ERROR(
        save(out.policy_version).with_context("checkpoint of step " + std::to_string(step)));
    out.checkpoint_dir = dir_of(out.policy_version);
    prune(out.policy_version);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  }

  // An sft phase on the model as it is; the RL trainer (and its optimizer state) is dropped
  // first, so the two never hold their masters at once, and is made again from the new weights.
  Result<PolicyUpdate> sft(const std::string& phase, const std::string& data_file, int epochs,
                           std::uint64_t version, rewardlog::RewardLogWriter& log,
                           const std::function<bool()>& stop_requested) {
    const auto started = std::chrono::steady_clock::now();
    trainer.reset();
    reference = nullptr;  // the next rl phase takes its own, from the weights SFT leaves
    SftJob job;
    job.data_file = data_file;
    job.epochs = epochs;
    job.tokenizer_dir = source_dir;
    for (const CurriculumPhase& p : config->curriculum.phases) {
      if (p.name != phase) continue;
      job.prompt_template = p.prompt_template;
      job.prompt_kind = p.kind;
    }
    DICE_ASSIGN_OR_RETURN(SftRunSummary summary,
                          train_sft(model, *config, job, log, stop_requested));
    PolicyUpdate out;
    out.policy_version = version;
    if (summary.steps == 0) return out;
    out.ran = true;
    out.policy_version = version + 1;
    DICE_RETURN_IF_ERROR(save(out.policy_version).with_context("checkpoint of sft phase " + phase));
    out.checkpoint_dir = dir_of(out.policy_version);
    prune(out.policy_version);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return out;
  }

  // A resume folder's model/ and optimizer.pt (the latter only while a trainer exists: after an
  // sft phase the next update makes one from the weights, as an uninterrupted run does).
  Status save_state(const std::string& dir) {
    DICE_RETURN_IF_ERROR(
        save_policy_checkpoint(*model, source_dir, dir + "/model", min_free_bytes()));
    if (!trainer) return Status::ok_status();
    // optimizer.pt holds the fp32 masters and AdamW's two moments: 12 bytes a parameter, the
    // largest file of the folder. Checked before LibTorch's writer starts (it would meet a full
    // disk midway): the resume folder's own check sizes it by the folder it replaces, and the
    // first one has none.
    std::uint64_t parameters = 0;
    for (const at::Tensor& p : model->parameters()) {
      parameters += static_cast<std::uint64_t>(p.numel());
    }
    DICE_RETURN_IF_ERROR(check_free_disk_space(
        dir, 12 * parameters, "the optimizer state " + dir + "/optimizer.pt", {min_free_bytes()}));
    return trainer->save_optimizer_state(dir + "/optimizer.pt");
  }

  Result<ResumedWeights> load_state(const std::string& dir, std::uint64_t version,
                                    bool workers_may_be_ahead) {
    std::error_code ec;
    if (!dir.empty()) {
      DICE_ASSIGN_OR_RETURN(Checkpoint saved, Checkpoint::open(dir + "/model"));
      DICE_RETURN_IF_ERROR(load_weights(saved, *model).with_context("resume " + dir));
      if (std::filesystem::exists(dir + "/optimizer.pt", ec)) {
        DICE_RETURN_IF_ERROR(make_trainer());
        DICE_RETURN_IF_ERROR(trainer->load_optimizer_state(dir + "/optimizer.pt"));
      } else {
        trainer.reset();
      }
    }
    ResumedWeights out;
    const std::optional<std::uint64_t> undone = restore_retention(version);
    out.policy_version = undone && workers_may_be_ahead ? *undone + 1 : version;
    if (out.policy_version == 0) return out;
    if (out.policy_version != version) {
      DICE_LOG(Warn) << "weights renumbered: workers may hold a version the restart undid"
                     << kv("saved_version", version) << kv("version", out.policy_version);
    }
    if (!std::filesystem::exists(dir_of(out.policy_version) + "/config.json", ec)) {
      DICE_RETURN_IF_ERROR(save(out.policy_version).with_context("checkpoint of resumed weights"));
      if (out.policy_version != version) prune(out.policy_version);
    }
    out.weights_dir = dir_of(out.policy_version);
    return out;
  }

  // Retention's books after a restart, from the folders on disk: versions after `version` are
  // updates the restart undoes (deleted); the others are sorted into recent and permanent.
  // Returns the newest version deleted, if any.
  std::optional<std::uint64_t> restore_retention(std::uint64_t version) {
    recent.clear();
    permanent.clear();
    std::vector<std::uint64_t> versions;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(base_dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("policy-v", 0) != 0) continue;
      const std::string digits = name.substr(8);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) continue;
      versions.push_back(std::stoull(digits));
    }
    std::sort(versions.begin(), versions.end());
    const auto interval = static_cast<std::uint64_t>(checkpoint.interval_steps);
    std::optional<std::uint64_t> newest_undone;
    for (std::uint64_t v : versions) {
      if (v > version) {
        Status removed = remove_tree(dir_of(v));
        DICE_LOG(Info) << "checkpoint of an update the restart undoes deleted" << kv("version", v)
                       << kv("ok", removed.ok());
        newest_undone = v;
      } else {
        (v % interval == 0 ? permanent : recent).push_back(v);
      }
    }
    return newest_undone;
  }

  // The phase's closing checkpoint: the model holds the newest weights (updates and sft train
  // it in place). Its name is not a version's, so retention (prune) never touches it.
  Result<std::string> finish_phase(const std::string& phase) {
    const std::string dir = base_dir + "/phase-" + phase;
    DICE_RETURN_IF_ERROR(save_policy_checkpoint(*model, source_dir, dir, min_free_bytes())
                             .with_context("checkpoint at the end of phase " + phase));
    return dir;
  }
};

PolicyTrainerOptions policy_trainer_options(const DiceConfig& config, const ModelConfig& shape) {
  const LearnerOptions& learner = config.learner;
  PolicyTrainerOptions trainer_options;
  trainer_options.loss = learner.loss;
  trainer_options.layout.block_size = shape.block_size;
  trainer_options.layout.mask_token_id = shape.mask_token_id;
  trainer_options.layout.denoising_steps = config.rollout.sampling.denoising_steps;
  trainer_options.layout.shrink = learner.loss.trace_shrink;
  if (learner.async.max_ahead > 0 && learner.async.stale == StaleSamples::kImportance) {
    trainer_options.importance_cap = learner.async.importance_cap;
  }
  return trainer_options;
}

}  // namespace

Result<PolicyStages> make_policy_stages(const DiceConfig& config, WeightsPusher* push) {
  const LearnerOptions& learner = config.learner;
  const std::string source =
      learner.init_checkpoint.empty() ? config.rollout.model_path : learner.init_checkpoint;
  const bool gpu = compat::cuda_available();
  const c10::TensorOptions options =
      c10::TensorOptions()
          .dtype(learner.dtype == TrainDtype::kBf16 ? at::kBFloat16 : at::kFloat)
          .device(gpu ? c10::Device(at::kCUDA, 0) : c10::Device(at::kCPU));
  auto model = load_qwen3_lm(source, options);
  if (!model.ok()) return model.status().with_context("learner: initial policy " + source);
  if (!gpu) {
    DICE_LOG(Warn) << "no CUDA device visible: the policy update runs on the CPU (only tiny "
                      "models finish a step there)"
                   << kv("model", source);
  }
  DICE_RETURN_IF_ERROR(
      check_weight_sync_setting(config.rollout.weight_sync, gpu, nccl::built_with_nccl()));
  if (push != nullptr)
    *push = make_weights_pusher(weights_push_options(config.rollout, config.run.id), *model);
  auto updater = std::make_shared<Updater>();
  updater->model = *model;
  updater->trainer_options = policy_trainer_options(config, (*model)->config());
  DICE_ASSIGN_OR_RETURN(static_cast<TrainingOptions&>(updater->trainer_options),
                        training_options(learner, options.device()));
  // Made now, so that bad trainer options are found at start (the first update reuses it).
  DICE_ASSIGN_OR_RETURN(updater->trainer,
                        PolicyTrainer::create(updater->model, updater->trainer_options));
  updater->config = &config;
  updater->source_dir = source;
  updater->base_dir = learner.checkpoint.dir + "/" + config.run.id;
  updater->checkpoint = learner.checkpoint;
  // Synced in its parent: the run's resume folders inside it count on it being on the disk.
  if (Status made = create_directories_durably(updater->base_dir); !made.ok()) {
    return Status::io_error("learner.checkpoint.dir: " + made.message());
  }
  DICE_LOG(Info) << "policy loaded for training" << kv("model", source)
                 << kv("device", gpu ? "cuda:0" : "cpu")
                 << kv("replicas", updater->trainer_options.data_parallel.devices.size())
                 << kv("dtype", learner.dtype == TrainDtype::kBf16 ? "bf16" : "fp32")
                 << kv("checkpoints", updater->base_dir);
  PolicyStages stages;
  stages.update = [updater](std::vector<TraceSample> samples, std::uint64_t step,
                            std::uint64_t version) {
    return updater->update(samples, step, version);
  };
  stages.sft = [updater](const std::string& phase, const std::string& data_file, int epochs,
                         std::uint64_t version, rewardlog::RewardLogWriter& log,
                         const std::function<bool()>& stop_requested) {
    return updater->sft(phase, data_file, epochs, version, log, stop_requested);
  };
  stages.save_state = [updater](const std::string& dir) { return updater->save_state(dir); };
  stages.load_state = [updater](const std::string& dir, std::uint64_t version, bool ahead) {
    return updater->load_state(dir, version, ahead);
  };
  stages.finish_phase = [updater](const std::string& phase, std::uint64_t, const std::string&) {
    return updater->finish_phase(phase);
  };
  stages.start_phase = [updater](const std::string& phase, const std::string& previous,
                                 bool resumed) {
    return updater->start_phase(phase, previous, resumed);
  };
  return stages;
}

}  // namespace dice
