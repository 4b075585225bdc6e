#include "learner/train/policy_trainer.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "common/log.h"
#include "learner/train/device_cache.h"
#include "learner/train/out_of_memory.h"
#include "learner/train/trace_loss.h"
#include "learner/train/training_flops.h"
#include "model/torch_compat.h"

namespace dice {

struct PolicyTrainer::Packed {
  std::int64_t rows = 0, length = 0;
  std::vector<std::int64_t> noisy;  // [rows * length]: one trace view a row
  // [rows * length], each view's clean copy beside it; with share_clean_copy [samples * length],
  // one a sample, and view_clean names each view's
  std::vector<std::int64_t> clean;
  std::int64_t clean_rows = 0;
  std::vector<std::int64_t> view_clean;
  std::vector<std::int64_t> flat_positions, targets;
  std::vector<float> old_log_probs, advantages, weights;
  std::vector<float> reference_log_probs;    // per scored token; empty: the KL is against old
  std::vector<std::int64_t> response_index;  // per scored token: its index in the response
  std::vector<float> temperatures;  // per scored token: its sample's sampling temperature (> 0)
  double model_flops = 0;           // of its forward (training_flops.h): each row at its own length
  std::int64_t real_positions = 0;  // token positions of noisy and clean rows that are not padding
};

double warmup_lr(const OptimizerOptions& optimizer, std::int64_t steps_taken) {
  const std::int64_t k = steps_taken + 1;
  if (optimizer.warmup_steps <= 0 || k >= optimizer.warmup_steps) return optimizer.lr;
  return optimizer.lr * static_cast<double>(k) / static_cast<double>(optimizer.warmup_steps);
}

Result<Qwen3LM> frozen_copy(const Qwen3LM& model) {
  try {
    std::vector<at::Tensor> own = model->parameters();
    c10::TensorOptions options;
    if (!own.empty())
      options = options.dtype(own.front().scalar_type()).device(own.front().device());
    Qwen3LM copy(model->config(), options);
    at::NoGradGuard no_grad;
    std::vector<at::Tensor> theirs = copy->parameters();
    for (std::size_t i = 0; i < own.size(); ++i) {
      theirs[i].copy_(own[i]);
      theirs[i].set_requires_grad(false);
    }
    copy->eval();
    copy->model->attention_tile = model->model->attention_tile;  // the same attention numerics
    return copy;
  } catch (const c10::Error& e) {
    return torch_failure("KL reference copy", e);
  }
}

Result<std::unique_ptr<PolicyTrainer>> PolicyTrainer::create(Qwen3LM model,
                                                             PolicyTrainerOptions options) {
  if (!model) return Status::invalid_argument("PolicyTrainer: no model");
  if (options.layout.block_size != model->config().block_size) {
    return Status::invalid_argument(
        "PolicyTrainer: trace block size " + std::to_string(options.layout.block_size) +
        " differs from the model's block_size " + std::to_string(model->config().block_size));
  }
  if (options.layout.mask_token_id != model->config().mask_token_id) {
    return Status::invalid_argument(
        "PolicyTrainer: trace mask token " + std::to_string(options.layout.mask_token_id) +
        " differs from the model's mask_token_id " + std::to_string(model->config().mask_token_id));
  }
  std::unique_ptr<PolicyTrainer> trainer(new PolicyTrainer(std::move(model), std::move(options)));
  DICE_ASSIGN_OR_RETURN(trainer->replicas_,
                        start_training(trainer->model_, trainer->options_, "PolicyTrainer"));
  return trainer;
}

PolicyTrainer::PolicyTrainer(Qwen3LM model, PolicyTrainerOptions options)
    : model_(std::move(model)), options_(std::move(options)) {}

PolicyTrainer::~PolicyTrainer() = default;

std::int64_t PolicyTrainer::micro_batches_wanted() const {
  return static_cast<std::int64_t>(
             std::max({1, options_.optimizer.grad_accumulation, replicas_->size()})) *
         memory_split_;
}

std::int64_t PolicyTrainer::samples_per_forward(std::size_t samples) const {
  const std::int64_t micro_batches = micro_batches_wanted();
  return (static_cast<std::int64_t>(samples) + micro_batches - 1) / micro_batches;
}

bool PolicyTrainer::uses_reference() const {
  return options_.loss.kl_reference == KlReference::kPhaseStart && options_.loss.kl_beta > 0;
}

struct PolicyTrainer::Prepared {
  std::int64_t sequences = 0;  // samples that score at least one token
  std::vector<Packed> micro_batches;
};

namespace {

// Sums over tokens become means; the sequence count is the prepared one.
void finish_stats(std::int64_t sequences, int optimizer_steps, PolicyUpdateStats* stats) {
  const double tokens = static_cast<double>(std::max<std::int64_t>(1, stats->scored_tokens));
  stats->sequences = sequences;
  stats->optimizer_steps = optimizer_steps;
  stats->kl /= tokens;
  stats->mean_ratio /= tokens;
  stats->clip_fraction /= tokens;
}

// Indices of `layouts`, longest first (ties in order): micro-batches cut from this order pad
// each row to a length close to its own. The update's sum does not depend on the grouping.
std::vector<std::size_t> longest_first(const std::vector<TraceLayout>& layouts) {
  std::vector<std::size_t> order(layouts.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return layouts[a].clean.size() > layouts[b].clean.size();
  });
  return order;
}

}  // namespace

Result<PolicyTrainer::Prepared> PolicyTrainer::prepare(
    const std::vector<TraceSample>& samples, std::vector<std::pair<std::size_t, Status>>* left_out,
    const std::vector<std::vector<float>>& references) const {
  std::vector<TraceLayout> layouts;
  std::vector<double> advantages;
  std::vector<const std::vector<float>*> layout_references;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    Result<TraceLayout> layout = trace_layout(samples[i], options_.layout);
    if (!layout.ok() && left_out != nullptr) {
      left_out->emplace_back(i, layout.status());
      continue;
    }
    if (!layout.ok()) return layout.status().with_context("sample " + std::to_string(i));
    if (layout->views.empty()) continue;  // an empty response scores nothing
    layouts.push_back(std::move(layout).value());
    advantages.push_back(samples[i].advantage);
    if (!references.empty()) layout_references.push_back(&references[i]);
  }
  Prepared prepared;
  const auto n = static_cast<std::int64_t>(layouts.size());
  prepared.sequences = n;
  if (n == 0) return prepared;
  // At least one micro-batch per replica (when there are samples enough).
  const std::int64_t micro_batches = std::min<std::int64_t>(n, micro_batches_wanted());
  const std::int64_t per_batch = (n + micro_batches - 1) / micro_batches;
  const std::vector<std::size_t> order = longest_first(layouts);
  // Packed once: every pass scores the same tokens against the same sampling log-probs.
  for (std::int64_t begin = 0; begin < n; begin += per_batch) {
    const std::int64_t end = std::min(n, begin + per_batch);
    std::vector<const TraceLayout*> batch;
    std::vector<double> batch_advantages;
    std::vector<const std::vector<float>*> batch_references;
    for (std::int64_t i = begin; i < end; ++i) {
      const std::size_t s = order[static_cast<std::size_t>(i)];
      batch.push_back(&layouts[s]);
      batch_advantages.push_back(advantages[s]);
      if (!layout_references.empty()) batch_references.push_back(layout_references[s]);
    }
    prepared.micro_batches.push_back(
        pack(batch, batch_advantages, 1.0 / static_cast<double>(n), batch_references));
  }
  return prepared;
}

PolicyUpdateStats PolicyTrainer::backward_pass(const Prepared& prepared) {
  PolicyUpdateStats stats;
  replicas_->masters(0).zero_grad();
  for (const Packed& p : prepared.micro_batches) accumulate(p, stats);
  return stats;
}

Result<std::pair<PolicyUpdateStats, double>> PolicyTrainer::step_on_replicas(
    const Prepared& prepared, double lr) {
  // Each micro-batch to the replica with the fewest token rows so far (ties: the lowest rank).
  const std::vector<Packed>& batches = prepared.micro_batches;
  const auto replicas = static_cast<std::size_t>(replicas_->size());
  std::vector<std::vector<std::size_t>> mine(replicas);
  std::vector<std::int64_t> load(replicas, 0);
  std::size_t cheapest = 0;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const auto least =
        static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    mine[least].push_back(k);
    load[least] += batches[k].rows * batches[k].length;
    if (batches[k].rows * batches[k].length < batches[cheapest].rows * batches[cheapest].length) {
      cheapest = k;
    }
  }
  const std::vector<std::vector<RankPass>> passes =
      rank_passes(mine, replicas_->passes_in_lockstep(), cheapest);
  std::vector<PolicyUpdateStats> stats(replicas);
  std::vector<double> norms(replicas, 0.0);
  Status ran = replicas_->run([&](int rank) -> Status {
    const auto r = static_cast<std::size_t>(rank);
    MasterWeights& masters = replicas_->masters(rank);
    bool stepping = false;
    try {
      masters.zero_grad();
      for (std::size_t j = 0; j < passes[r].size(); ++j) {
        if (j + 1 == passes[r].size()) replicas_->arm(rank);
        const RankPass& pass = passes[r][j];
        if (pass.padding) {
          accumulate_padding(batches[pass.forward], rank);
        } else {
          accumulate(batches[pass.forward], stats[r], rank);
        }
      }
      auto mark = std::chrono::steady_clock::now();
      lap(&mark, rank);
      stepping = true;
      norms[r] = masters.step(lr);
      stats[r].optimizer_seconds += lap(&mark, rank);
    } catch (const c10::Error& e) {
      // A step cut short may have moved some weights already: not one to run again.
      if (stepping) {
        return Status::internal(std::string("PolicyTrainer::update: optimizer step: ") +
                                e.what_without_backtrace());
      }
      return torch_failure("PolicyTrainer::update", e);
    }
    return Status::ok_status();
  });
  DICE_RETURN_IF_ERROR(ran);
  PolicyUpdateStats sum = stats.front();
  for (std::size_t r = 1; r < replicas; ++r) {
    const PolicyUpdateStats& s = stats[r];
    sum.scored_tokens += s.scored_tokens;
    sum.forwards += s.forwards;
    sum.loss += s.loss;
    sum.policy_loss += s.policy_loss;
    sum.kl += s.kl;
    sum.mean_ratio += s.mean_ratio;
    sum.clip_fraction += s.clip_fraction;
    sum.model_flops += s.model_flops;
  }
  return std::make_pair(sum, norms.front());
}

double PolicyTrainer::lap(std::chrono::steady_clock::time_point* mark, int rank) const {
  if (!options_.time_parts || rank != 0) return 0.0;
  compat::synchronize(replicas_->masters(0).device());
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - *mark).count();
  *mark = now;
  return seconds;
}

struct PolicyTrainer::Rescored {
  std::vector<TraceSample> samples;  // empty: nothing was recomputed, the samples' own stand
  // With importance_cap: the sum of the tokens' truncated weights, the tokens, those the cap cut.
  double importance_sum = 0.0, importance_tokens = 0.0, importance_capped = 0.0;
  double seconds = 0.0;  // with time_parts
  double flops = 0.0;    // model FLOPs of its forwards
  Status failed;         // a forward's LibTorch failure (out of memory, say)
};

PolicyTrainer::Rescored PolicyTrainer::rescore(const std::vector<TraceSample>& samples) {
  Rescored out;
  const double flops_before = forward_flops_;
  auto mark = std::chrono::steady_clock::now();
  lap(&mark);
  const double cap = options_.importance_cap;
  if (options_.loss.recompute_old_log_probs || cap > 0) {
    out.samples = samples;
    std::vector<Result<std::vector<float>>> scored =
        log_probs(samples, samples_per_forward(samples.size()));
    for (std::size_t i = 0; i < out.samples.size(); ++i) {
      TraceSample& s = out.samples[i];
      Result<std::vector<float>>& lp = scored[i];
      if (!lp.ok()) {
        // A trace that does not fit keeps its own (prepare() names it); a LibTorch failure
        // fails the update, as it does in the update's other forwards.
        if (lp.status().code() != StatusCode::kInvalidArgument && out.failed.ok()) {
          out.failed = lp.status();
        }
        continue;
      }
      if (cap > 0) {
        s.importance.resize(s.old_log_probs.size());
        for (std::size_t t = 0; t < s.importance.size(); ++t) {
          const double w = std::exp(static_cast<double>((*lp)[t]) - s.old_log_probs[t]);
          s.importance[t] = static_cast<float>(std::min(w, cap));
          out.importance_sum += s.importance[t];
          out.importance_capped += w > cap ? 1.0 : 0.0;
          out.importance_tokens += 1.0;
        }
      }
      s.old_log_probs = std::move(lp).value();
    }
  }
  out.seconds = lap(&mark);
  out.flops = forward_flops_ - flops_before;
  return out;
}

Result<std::vector<PolicyTrainer::Prepared>> PolicyTrainer::mini_batches(
    Prepared whole, const std::vector<TraceSample>& input,
    const std::vector<std::pair<std::size_t, Status>>* left_out,
    const std::vector<std::vector<float>>& references) const {
  std::vector<Prepared> parts;
  const std::int64_t wanted =
      std::min<std::int64_t>(whole.sequences, std::max(1, options_.loss.ppo_mini_batches));
  if (wanted <= 1) {
    parts.push_back(std::move(whole));
    return parts;
  }
  std::vector<bool> bad(input.size(), false);
  if (left_out != nullptr) {
    for (const auto& entry : *left_out) {
      if (entry.first < bad.size()) bad[entry.first] = true;
    }
  }
  std::vector<TraceSample> fitting;
  std::vector<std::vector<float>> fitting_references;
  for (std::size_t i = 0; i < input.size(); ++i) {
    if (bad[i]) continue;
    fitting.push_back(input[i]);
    if (!references.empty()) fitting_references.push_back(references[i]);
  }
  const std::size_t per_part = (fitting.size() + wanted - 1) / static_cast<std::size_t>(wanted);
  for (std::size_t begin = 0; begin < fitting.size(); begin += per_part) {
    const std::size_t end = std::min(fitting.size(), begin + per_part);
    const auto from = static_cast<std::ptrdiff_t>(begin), to = static_cast<std::ptrdiff_t>(end);
    std::vector<std::vector<float>> part_references;
    if (!fitting_references.empty()) {
      part_references.assign(fitting_references.begin() + from, fitting_references.begin() + to);
    }
    DICE_ASSIGN_OR_RETURN(Prepared part, prepare({fitting.begin() + from, fitting.begin() + to},
                                                 nullptr, part_references));
    if (part.sequences > 0) parts.push_back(std::move(part));
  }
  return parts;
}

Result<PolicyUpdateStats> PolicyTrainer::run_epochs(const std::vector<Prepared>& parts,
                                                    PolicyUpdateStats* times) {
  PolicyUpdateStats stats;
  const int epochs = std::max(1, options_.loss.ppo_epochs);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    stats = PolicyUpdateStats{};  // the last epoch's figures are reported
    for (const Prepared& part : parts) {
      const double lr = warmup_lr(options_.optimizer, steps_);
      DICE_ASSIGN_OR_RETURN(auto stepped, step_on_replicas(part, lr));
      stats.lr = lr;
      const PolicyUpdateStats& pass = stepped.first;
      const double norm = stepped.second;
      times->optimizer_seconds += pass.optimizer_seconds;
      ++steps_;
      times->model_flops += pass.model_flops;
      times->upload_seconds += pass.upload_seconds;
      times->forward_seconds += pass.forward_seconds;
      times->backward_seconds += pass.backward_seconds;
      stats.scored_tokens += pass.scored_tokens;
      stats.forwards += pass.forwards;
      stats.loss += pass.loss / static_cast<double>(parts.size());
      stats.policy_loss += pass.policy_loss / static_cast<double>(parts.size());
      stats.kl += pass.kl;
      stats.mean_ratio += pass.mean_ratio;
      stats.clip_fraction += pass.clip_fraction;
      stats.grad_norm += norm / static_cast<double>(parts.size());
    }
  }
  return stats;
}

Result<PolicyUpdateStats> PolicyTrainer::update(
    const std::vector<TraceSample>& samples,
    std::vector<std::pair<std::size_t, Status>>* left_out) {
  const std::size_t listed = left_out != nullptr ? left_out->size() : 0;
  // Finer until one sample a forward. On several devices a rank that fails leaves the others
  // inside their collectives: no retry there.
  int most_split = memory_split_;
  if (replicas_->size() == 1) {
    const std::int64_t unsplit = micro_batches_wanted() / memory_split_;
    while (unsplit * most_split < static_cast<std::int64_t>(samples.size())) most_split *= 2;
  }
  const std::function<Result<PolicyUpdateStats>(int)> attempt = [&](int) {
    const std::int64_t steps_before = steps_;
    Result<PolicyUpdateStats> done = update_once(samples, left_out);
    if (!done.ok() && steps_ != steps_before && out_of_device_memory(done.status())) {
      // An optimizer step of this update went through (ppo_epochs or ppo_mini_batches > 1):
      // running it again would take that step twice.
      return Result<PolicyUpdateStats>(Status::internal(
          done.status().message() + " (after " + std::to_string(steps_ - steps_before) +
          " of the update's optimizer steps: not run again)"));
    }
    return done;
  };
  return with_finer_forwards<PolicyUpdateStats>(
      &memory_split_, most_split, attempt, [&](int split, const Status& why) {
        if (left_out != nullptr) left_out->resize(listed);
        const c10::Device home = replicas_->masters(0).device();
        if (home.is_cuda()) release_learner_cache(home.index(), "update out of memory");
        DICE_LOG(Warn) << "update ran out of device memory: trying again with forwards cut finer"
                       << kv("micro_batches", micro_batches_wanted()) << kv("memory_split", split)
                       << kv("error", why.to_string());
      });
}

Result<PolicyUpdateStats> PolicyTrainer::update_once(
    const std::vector<TraceSample>& samples,
    std::vector<std::pair<std::size_t, Status>>* left_out) {
  const Rescored rescored = rescore(samples);
  DICE_RETURN_IF_ERROR(rescored.failed);
  const std::vector<TraceSample>& input = rescored.samples.empty() ? samples : rescored.samples;
  const double reference_flops_before = forward_flops_;
  DICE_ASSIGN_OR_RETURN(std::vector<std::vector<float>> references, reference_log_probs(input));
  const double reference_flops = forward_flops_ - reference_flops_before;
  DICE_ASSIGN_OR_RETURN(Prepared whole, prepare(input, left_out, references));
  if (whole.sequences == 0) return PolicyUpdateStats{};
  DICE_ASSIGN_OR_RETURN(std::vector<Prepared> parts,
                        mini_batches(std::move(whole), input, left_out, references));
  PolicyUpdateStats times;  // the parts' seconds over every pass, and the update's model FLOPs
  times.model_flops = rescored.flops + reference_flops;
  DICE_ASSIGN_OR_RETURN(PolicyUpdateStats stats, run_epochs(parts, &times));
  std::int64_t sequences = 0, positions = 0, real_positions = 0;
  for (const Prepared& part : parts) {
    sequences += part.sequences;
    for (const Packed& p : part.micro_batches) {
      positions += (p.rows + p.clean_rows) * p.length;
      real_positions += p.real_positions;
    }
  }
  const int epochs = std::max(1, options_.loss.ppo_epochs);
  finish_stats(sequences, epochs * static_cast<int>(parts.size()), &stats);
  if (rescored.importance_tokens > 0) {
    stats.importance_mean = rescored.importance_sum / rescored.importance_tokens;
    stats.importance_capped = rescored.importance_capped / rescored.importance_tokens;
  }
  stats.model_flops = times.model_flops;
  stats.padding_fraction =
      positions > 0 ? 1.0 - static_cast<double>(real_positions) / static_cast<double>(positions)
                    : 0.0;
  stats.rescore_seconds = rescored.seconds;
  stats.upload_seconds = times.upload_seconds;
  stats.forward_seconds = times.forward_seconds;
  stats.backward_seconds = times.backward_seconds;
  stats.optimizer_seconds = times.optimizer_seconds;
  return stats;
}

Result<PolicyUpdateStats> PolicyTrainer::gradients(
    const std::vector<TraceSample>& samples,
    std::vector<std::pair<std::size_t, Status>>* left_out) {
  DICE_ASSIGN_OR_RETURN(std::vector<std::vector<float>> references, reference_log_probs(samples));
  DICE_ASSIGN_OR_RETURN(Prepared prepared, prepare(samples, left_out, references));
  PolicyUpdateStats stats;
  if (prepared.sequences == 0) return stats;
  try {
    stats = backward_pass(prepared);
    double squares = 0;
    for (const at::Tensor& p : model_->parameters()) {
      if (p.grad().defined()) squares += p.grad().to(at::kDouble).pow(2).sum().item<double>();
    }
    stats.grad_norm = std::sqrt(squares);
  } catch (const c10::Error& e) {
    return Status::internal(std::string("PolicyTrainer::gradients: ") + e.what_without_backtrace());
  }
  finish_stats(prepared.sequences, 0, &stats);
  return stats;
}

PolicyTrainer::Packed PolicyTrainer::pack(
    const std::vector<const TraceLayout*>& layouts, const std::vector<double>& advantages,
    double sequence_weight, const std::vector<const std::vector<float>*>& references) const {
  // Rows: every view of every sample, padded with the mask token to the longest (padding sits in
  // blocks after the real ones, which no real position attends to).
  Packed p;
  for (const TraceLayout* l : layouts) {
    p.length = std::max(p.length, static_cast<std::int64_t>(l->clean.size()));
    p.rows += static_cast<std::int64_t>(l->views.size());
  }
  const std::int64_t mask = options_.layout.mask_token_id;
  const bool shared = options_.share_clean_copy;
  p.clean_rows = shared ? static_cast<std::int64_t>(layouts.size()) : p.rows;
  p.noisy.assign(static_cast<std::size_t>(p.rows * p.length), mask);
  p.clean.assign(static_cast<std::size_t>(p.clean_rows * p.length), mask);
  std::int64_t row = 0;
  for (std::size_t s = 0; s < layouts.size(); ++s) {
    const TraceLayout& l = *layouts[s];
    const double weight = sequence_weight / static_cast<double>(l.response_length);
    const auto length = static_cast<std::int64_t>(l.clean.size());
    p.real_positions +=
        length * (static_cast<std::int64_t>(l.views.size()) + (shared ? 1 : l.views.size()));
    if (shared) {
      const auto sample = static_cast<std::int64_t>(s);
      std::copy(l.clean.begin(), l.clean.end(), p.clean.begin() + sample * p.length);
      p.model_flops +=
          training_views_flops(model_->config(), length, static_cast<std::int64_t>(l.views.size()));
    }
    for (const TraceView& v : l.views) {
      std::copy(v.noisy.begin(), v.noisy.end(), p.noisy.begin() + row * p.length);
      if (shared) {
        p.view_clean.push_back(static_cast<std::int64_t>(s));
      } else {
        std::copy(l.clean.begin(), l.clean.end(), p.clean.begin() + row * p.length);
        p.model_flops += training_sequence_flops(model_->config(), length);
      }
      for (std::size_t t = 0; t < v.positions.size(); ++t) {
        p.flat_positions.push_back(row * p.length + v.positions[t]);
        p.targets.push_back(v.targets[t]);
        p.old_log_probs.push_back(v.old_log_probs[t]);
        p.advantages.push_back(static_cast<float>(advantages[s]));
        p.weights.push_back(static_cast<float>(weight * v.importance[t]));
        p.response_index.push_back(v.positions[t] - l.prompt_length);
        p.temperatures.push_back(static_cast<float>(l.temperature));
        if (!references.empty()) {
          const auto index = static_cast<std::size_t>(p.response_index.back());
          p.reference_log_probs.push_back((*references[s])[index]);
        }
      }
      ++row;
    }
  }
  p.model_flops += lm_head_flops(model_->config(), static_cast<std::int64_t>(p.targets.size()));
  return p;
}

at::Tensor PolicyTrainer::policy_log_probs(const Packed& p, PolicyUpdateStats* stats, int rank,
                                           Qwen3LM scorer) {
  const c10::Device device = replicas_->masters(rank).device();
  Qwen3LM model = scorer ? scorer : replicas_->replica(rank);
  const auto long_cpu = at::TensorOptions().dtype(at::kLong);
  auto mark = std::chrono::steady_clock::now();
  if (stats != nullptr) lap(&mark, rank);
  at::Tensor x_t = at::tensor(p.noisy, long_cpu).view({p.rows, p.length}).to(device);
  at::Tensor x_0 = at::tensor(p.clean, long_cpu).view({p.clean_rows, p.length}).to(device);
  if (stats != nullptr) stats->upload_seconds += lap(&mark, rank);
  at::Tensor hidden = options_.share_clean_copy  // [rows, length, hidden]
                          ? model->hidden_training_views(x_t, x_0, p.view_clean)
                          : model->hidden_training(x_t, x_0);
  at::Tensor picked = hidden.reshape({p.rows * p.length, hidden.size(-1)})
                          .index_select(0, at::tensor(p.flat_positions, long_cpu).to(device));
  // float32 at least (a bf16 model's log-softmax would round away the ratio); a float64 model
  // (the gradient check) keeps its precision.
  at::Tensor logits = model->logits(picked);
  if (logits.scalar_type() != at::kDouble) logits = logits.to(at::kFloat);
  // Each token at its sample's sampling temperature (TraceSample::temperature), as it was drawn.
  if (std::any_of(p.temperatures.begin(), p.temperatures.end(), [](float t) { return t != 1; })) {
    const auto float_cpu = at::TensorOptions().dtype(at::kFloat);
    logits = logits /
             at::tensor(p.temperatures, float_cpu).to(device, logits.scalar_type()).unsqueeze(1);
  }
  // The sampler never draws the mask token (rollout/token_draw.h): its policy is the model's
  // softmax over the other tokens, and so is the one trained here.
  logits = logits.index_fill(1, at::tensor({options_.layout.mask_token_id}, long_cpu).to(device),
                             -std::numeric_limits<double>::infinity());
  return logits.log_softmax(-1)
      .gather(1, at::tensor(p.targets, long_cpu).to(device).unsqueeze(1))
      .squeeze(1);
}

void PolicyTrainer::accumulate_padding(const Packed& p, int rank) {
  (policy_log_probs(p, nullptr, rank).sum() * 0.0).backward();
}

void PolicyTrainer::accumulate(const Packed& p, PolicyUpdateStats& stats, int rank) {
  const c10::Device device = replicas_->masters(rank).device();
  const auto float_cpu = at::TensorOptions().dtype(at::kFloat);
  const double upload_before = stats.upload_seconds;
  auto mark = std::chrono::steady_clock::now();
  lap(&mark, rank);
  at::Tensor new_log_probs = policy_log_probs(p, &stats, rank);
  const at::Tensor reference = p.reference_log_probs.empty()
                                   ? at::Tensor()
                                   : at::tensor(p.reference_log_probs, float_cpu).to(device);
  TraceTokenLoss terms =
      trace_token_loss(new_log_probs, at::tensor(p.old_log_probs, float_cpu).to(device),
                       at::tensor(p.advantages, float_cpu).to(device), options_.loss, reference);
  at::Tensor weights = at::tensor(p.weights, float_cpu).to(device);
  at::Tensor loss = (terms.loss * weights).sum();
  stats.forward_seconds += lap(&mark, rank) - (stats.upload_seconds - upload_before);
  loss.backward();
  stats.backward_seconds += lap(&mark, rank);
  stats.model_flops += 3 * p.model_flops;  // backward is twice the forward

  stats.forwards += 1;
  stats.scored_tokens += static_cast<std::int64_t>(p.targets.size());
  stats.loss += loss.item<double>();
  stats.policy_loss += (terms.policy.detach() * weights).sum().item<double>();
  stats.kl += terms.kl.detach().sum().item<double>();
  stats.mean_ratio += terms.ratio.sum().item<double>();
  stats.clip_fraction += terms.clipped.sum().item<double>();
}

Result<std::vector<float>> PolicyTrainer::log_probs(const TraceSample& sample) {
  return std::move(log_probs(std::vector<TraceSample>{sample}, 1).front());
}

std::vector<Result<std::vector<float>>> PolicyTrainer::log_probs(
    const std::vector<TraceSample>& samples, std::int64_t per_forward) {
  return score(samples, per_forward, nullptr);
}

Result<std::vector<std::vector<float>>> PolicyTrainer::reference_log_probs(
    const std::vector<TraceSample>& samples) {
  std::vector<std::vector<float>> out;
  if (!uses_reference()) return out;
  if (!reference_) {
    DICE_ASSIGN_OR_RETURN(reference_, frozen_copy(model_));
  }
  for (Result<std::vector<float>>& lp :
       score(samples, samples_per_forward(samples.size()), reference_)) {
    if (!lp.ok() && lp.status().code() != StatusCode::kInvalidArgument) return lp.status();
    out.push_back(lp.ok() ? std::move(lp).value() : std::vector<float>());
  }
  return out;
}

std::vector<Result<std::vector<float>>> PolicyTrainer::score(
    const std::vector<TraceSample>& samples, std::int64_t per_forward, Qwen3LM scorer) {
  std::vector<Result<std::vector<float>>> out;
  std::vector<TraceLayout> layouts;
  std::vector<std::size_t> owner;  // layouts[k] is samples[owner[k]]'s
  for (std::size_t i = 0; i < samples.size(); ++i) {
    Result<TraceLayout> layout = trace_layout(samples[i], options_.layout);
    if (!layout.ok()) {
      out.emplace_back(layout.status());
      continue;
    }
    out.emplace_back(std::vector<float>(samples[i].response.size(), 0.0f));
    if (layout->views.empty()) continue;  // nothing scored: zeros
    layouts.push_back(std::move(layout).value());
    owner.push_back(i);
  }
  // Longest first, as prepare() groups them: each forward pads to a length near its own.
  const std::vector<std::size_t> order = longest_first(layouts);
  const std::size_t step = static_cast<std::size_t>(std::max<std::int64_t>(1, per_forward));
  for (std::size_t begin = 0; begin < order.size(); begin += step) {
    const std::size_t end = std::min(order.size(), begin + step);
    std::vector<const TraceLayout*> batch;
    for (std::size_t i = begin; i < end; ++i) batch.push_back(&layouts[order[i]]);
    try {
      at::NoGradGuard no_grad;
      Packed p = pack(batch, std::vector<double>(batch.size(), 0.0), 1.0);
      forward_flops_ += p.model_flops;
      at::Tensor lp = policy_log_probs(p, nullptr, 0, scorer).to(at::kCPU, at::kFloat).contiguous();
      const float* values = lp.data_ptr<float>();
      // pack() lays the scored tokens out sample after sample, view after view.
      std::size_t t = 0;
      for (std::size_t i = begin; i < end; ++i) {
        std::vector<float>& mine = out[owner[order[i]]].value();
        for (const TraceView& v : layouts[order[i]].views) {
          for (std::size_t j = 0; j < v.positions.size(); ++j, ++t) {
            mine[static_cast<std::size_t>(p.response_index[t])] = values[t];
          }
        }
      }
    } catch (const c10::Error& e) {
      const Status failed = torch_failure("PolicyTrainer::log_probs", e);
      for (std::size_t i = begin; i < end; ++i) out[owner[order[i]]] = failed;
    }
  }
  return out;
}

Status PolicyTrainer::save_optimizer_state(const std::string& path) const {
  return replicas_->save_optimizer_state(path);
}

Status PolicyTrainer::load_optimizer_state(const std::string& path) {
  DICE_RETURN_IF_ERROR(replicas_->load_optimizer_state(path));
  steps_ = replicas_->masters(0).steps();  // the lr warm-up goes on from there
  return Status::ok_status();
}

}  // namespace dice
