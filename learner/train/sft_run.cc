#include "learner/train/sft_run.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>

#include "common/disk_space.h"
#include "common/durable_file.h"
#include "common/log.h"
#include "learner/curriculum/prompt_template.h"
#include "learner/curriculum/sft_data.h"
#include "learner/step/step_records.h"
#include "learner/train/device_cache.h"
#include "learner/train/policy_checkpoint.h"
#include "learner/train/sft_trainer.h"
#include "model/torch_compat.h"
#include "model/weights.h"
#include "net/wire/envelope.h"

namespace dice {
namespace {

// lr at step `step` (0-based) of `total`: linear warm-up over the first warmup_ratio, then flat.
double sft_lr(const SftOptions& sft, std::int64_t step, std::int64_t total) {
  const auto warmup = static_cast<std::int64_t>(std::ceil(sft.warmup_ratio * total));
  if (warmup <= 0 || step >= warmup) return sft.lr;
  return sft.lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
}

// The initial policy from `source`, on cuda:0 when `gpu`, else on the CPU.
Result<Qwen3LM> load_initial_policy(const LearnerOptions& learner, const std::string& source,
                                    bool gpu) {
  auto model = load_qwen3_lm(
      source, c10::TensorOptions()
                  .dtype(learner.dtype == TrainDtype::kBf16 ? at::kBFloat16 : at::kFloat)
                  .device(gpu ? c10::Device(at::kCUDA, 0) : c10::Device(at::kCPU)));
  if (!model.ok()) return model.status().with_context("learner: initial policy " + source);
  return model;
}

// The SFT samples of `data_file` that fit sft.max_length; InvalidArgument when none does.
Result<SftData> load_sft_samples(const DiceConfig& config, const SftJob& job,
                                 const ModelConfig& shape) {
  const std::string& data_file = job.data_file;
  const std::string& source = job.tokenizer_dir;
  const SftOptions& sft = config.learner.sft;
  // The tokenizer only matters for text items; pre-tokenized data needs none.
  std::optional<tokenizer::Tokenizer> tok;
  const std::string tokenizer_path = source + "/tokenizer.json";
  if (std::filesystem::exists(tokenizer_path)) {
    auto loaded = tokenizer::Tokenizer::load(tokenizer_path);
    if (!loaded.ok()) return loaded.status();
    tok.emplace(std::move(loaded).value());
  }
  DICE_ASSIGN_OR_RETURN(auto templates, load_prompt_templates(config.rollout.prompt_templates));
  if (!job.prompt_template.empty()) {
    DICE_ASSIGN_OR_RETURN(PromptTemplate own,
                          PromptTemplate::load_file(job.prompt_template, job.prompt_kind));
    templates.insert_or_assign(job.prompt_kind, std::move(own));
  }
  DICE_ASSIGN_OR_RETURN(SftData data,
                        load_sft_data(data_file, tok ? &*tok : nullptr, templates, sft.max_length,
                                      shape.vocab_size, shape.mask_token_id));
  if (data.samples.empty()) {
    return Status::invalid_argument("SFT data " + data_file + ": no sample fits " +
                                    std::to_string(sft.max_length) + " tokens (" +
                                    std::to_string(data.too_long) + " too long)");
  }
  return data;
}

Result<SftTrainerOptions> sft_trainer_options(const LearnerOptions& learner,
                                              const c10::Device& home) {
  SftTrainerOptions options;
  DICE_ASSIGN_OR_RETURN(static_cast<TrainingOptions&>(options), training_options(learner, home));
  options.seed = learner.seed != 0 ? learner.seed : std::random_device{}();
  options.pack_length = learner.sft.packed ? learner.sft.max_length : 0;
  options.rows_per_forward = learner.sft.rows_per_forward;
  return options;
}

// Batch `b` of the epoch's shuffled `order`; adds its tokens to `*tokens`.
std::vector<const SftSample*> batch_at(const SftData& data, const std::vector<std::size_t>& order,
                                       std::int64_t b, std::int64_t batch_size,
                                       std::int64_t* tokens) {
  const auto n = static_cast<std::int64_t>(data.samples.size());
  std::vector<const SftSample*> batch;
  for (std::int64_t i = b * batch_size; i < std::min(n, (b + 1) * batch_size); ++i) {
    const SftSample& s = data.samples[order[static_cast<std::size_t>(i)]];
    batch.push_back(&s);
    *tokens += static_cast<std::int64_t>(s.prompt.size() + s.response.size());
  }
  return batch;
}

// The step's loss, lr and gradient norm as reward-log metrics.
Status append_step_metrics(rewardlog::RewardLogWriter& log, const std::string& run_id,
                           std::int64_t step, const SftStepStats& stats, double lr) {
  const std::int64_t now_ms = wire::unix_millis_now();
  std::vector<rewardlog::LogRecord> records;
  for (const auto& [name, value] : {std::pair<const char*, double>{"sft/loss", stats.loss},
                                    {"sft/lr", lr},
                                    {"sft/grad_norm", stats.grad_norm}}) {
    DICE_ASSIGN_OR_RETURN(
        rewardlog::LogRecord r,
        metric_record(run_id, name, static_cast<std::uint64_t>(step), value, now_ms));
    records.push_back(std::move(r));
  }
  return log.append(std::move(records));
}

void log_step_progress(std::int64_t step, std::int64_t total, int epoch, const SftStepStats& stats,
                       double lr, std::int64_t tokens,
                       std::chrono::steady_clock::time_point started) {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  DICE_LOG(Info) << "SFT step " << step << "/" << total << kv("epoch", epoch + 1)
                 << kv("loss", stats.loss) << kv("lr", lr) << kv("grad_norm", stats.grad_norm)
                 << kv("tokens_per_s", static_cast<std::int64_t>(tokens / std::max(seconds, 1e-3)))
                 << kv("eta_s", static_cast<std::int64_t>(seconds / step * (total - step)));
}

// train_sft's steps; the trainer (its optimizer state and activations) lives only in here.
Result<SftRunSummary> run_sft_steps(Qwen3LM model, const DiceConfig& config, const SftJob& job,
                                    rewardlog::RewardLogWriter& log,
                                    const std::function<bool()>& stop_requested) {
  const LearnerOptions& learner = config.learner;
  const SftOptions& sft = learner.sft;
  DICE_ASSIGN_OR_RETURN(SftData data, load_sft_samples(config, job, model->config()));
  const c10::Device home = model->parameters().front().device();
  DICE_ASSIGN_OR_RETURN(const SftTrainerOptions options, sft_trainer_options(learner, home));
  DICE_ASSIGN_OR_RETURN(auto trainer, SftTrainer::create(model, options));
  const auto n = static_cast<std::int64_t>(data.samples.size());
  const std::int64_t per_epoch = (n + sft.batch_size - 1) / sft.batch_size;
  const std::int64_t total = per_epoch * job.epochs;
  service::Gauge* step_gauge = nullptr;
  service::Gauge* loss_gauge = nullptr;
  if (job.registry != nullptr) {
    DICE_ASSIGN_OR_RETURN(
        step_gauge, job.registry->gauge("dice_learner_sft_step", "SFT optimizer steps done."));
    DICE_ASSIGN_OR_RETURN(
        loss_gauge, job.registry->gauge("dice_learner_sft_loss", "Loss of the last SFT step."));
  }
  DICE_LOG(Info) << "SFT" << kv("data", job.data_file) << kv("samples", n)
                 << kv("too_long", data.too_long) << kv("epochs", job.epochs)
                 << kv("batch_size", sft.batch_size) << kv("steps", total) << kv("lr", sft.lr)
                 << kv("replicas", options.data_parallel.devices.size());
  SftRunSummary summary;
  std::mt19937_64 shuffle(options.seed ^ 0x5f7);
  std::vector<std::size_t> order(data.samples.size());
  const auto started = std::chrono::steady_clock::now();
  std::int64_t tokens = 0;
  for (int epoch = 0; epoch < job.epochs; ++epoch) {
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), shuffle);
    for (std::int64_t b = 0; b < per_epoch; ++b) {
      if (stop_requested()) {
        summary.stopped = true;
        DICE_LOG(Info) << "stop requested: SFT ends after step " << summary.steps;
        return summary;
      }
      const std::vector<const SftSample*> batch = batch_at(data, order, b, sft.batch_size, &tokens);
      const double lr = sft_lr(sft, summary.steps, total);
      DICE_ASSIGN_OR_RETURN(SftStepStats stats, trainer->step(batch, lr));
      ++summary.steps;
      if (step_gauge != nullptr) step_gauge->set(static_cast<double>(summary.steps));
      if (loss_gauge != nullptr) loss_gauge->set(stats.loss);
      DICE_RETURN_IF_ERROR(append_step_metrics(log, config.run.id, summary.steps, stats, lr));
      log_step_progress(summary.steps, total, epoch, stats, lr, tokens, started);
      if (job.save_every && summary.steps % learner.checkpoint.interval_steps == 0 &&
          summary.steps < total) {
        DICE_RETURN_IF_ERROR(job.save_every(summary.steps));
      }
    }
  }
  return summary;
}

}  // namespace

Result<SftRunSummary> train_sft(Qwen3LM model, const DiceConfig& config, const SftJob& job,
                                rewardlog::RewardLogWriter& log,
                                const std::function<bool()>& stop_requested) {
  const c10::Device home = model->parameters().front().device();
  Result<SftRunSummary> summary = run_sft_steps(model, config, job, log, stop_requested);
  if (home.is_cuda()) release_learner_cache(home.index(), "sft");
  return summary;
}

Result<SftRunSummary> run_sft(const DiceConfig& config, rewardlog::RewardLogWriter& log,
                              service::MetricsRegistry& registry,
                              const std::function<bool()>& stop_requested) {
  const LearnerOptions& learner = config.learner;
  const std::string source =
      learner.init_checkpoint.empty() ? config.rollout.model_path : learner.init_checkpoint;
  const bool gpu = compat::cuda_available();
  DICE_ASSIGN_OR_RETURN(Qwen3LM model, load_initial_policy(learner, source, gpu));
  if (!gpu) {
    DICE_LOG(Warn) << "no CUDA device visible: SFT runs on the CPU" << kv("model", source);
  }
  const std::string base = learner.checkpoint.dir + "/" + config.run.id;
  if (Status made = create_directories_durably(base); !made.ok()) {
    return Status::io_error("learner.checkpoint.dir: " + made.message());
  }
  DICE_LOG(Info) << "SFT run" << kv("model", source) << kv("device", gpu ? "cuda:0" : "cpu");
  std::string last;
  auto save = [&](std::int64_t steps) -> Status {
    const std::string dir = base + "/sft-step-" + std::to_string(steps);
    DICE_RETURN_IF_ERROR(save_policy_checkpoint(
        *model, source, dir,
        static_cast<std::uint64_t>(config.run.min_free_disk_mb) * kBytesPerMiB));
    last = dir;
    DICE_LOG(Info) << "SFT checkpoint written" << kv("dir", dir) << kv("step", steps);
    return Status::ok_status();
  };
  SftJob job;
  job.data_file = learner.sft.data_file;
  job.epochs = learner.sft.epochs;
  job.tokenizer_dir = source;
  job.save_every = save;
  job.registry = &registry;
  DICE_ASSIGN_OR_RETURN(SftRunSummary summary, train_sft(model, config, job, log, stop_requested));
  if (summary.steps > 0) DICE_RETURN_IF_ERROR(save(summary.steps));
  summary.checkpoint = last;
  return summary;
}

}  // namespace dice
