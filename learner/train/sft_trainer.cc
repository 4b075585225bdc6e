#include "learner/train/sft_trainer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "learner/train/training_flops.h"

namespace dice {

SftNoised sft_noise(const SftSample& sample, double t, std::int64_t block_size,
                    std::int64_t mask_token_id, std::mt19937_64& rng) {
  SftNoised out;
  out.p = (1.0 - 1e-3) * t + 1e-3;
  const auto prompt = static_cast<std::int64_t>(sample.prompt.size());
  const std::int64_t used = prompt + static_cast<std::int64_t>(sample.response.size());
  const std::int64_t length = (used + block_size - 1) / block_size * block_size;
  out.x_0.assign(static_cast<std::size_t>(length), mask_token_id);
  std::copy(sample.prompt.begin(), sample.prompt.end(), out.x_0.begin());
  std::copy(sample.response.begin(), sample.response.end(), out.x_0.begin() + prompt);
  out.x_t = out.x_0;
  std::bernoulli_distribution mask(out.p);
  for (std::int64_t i = prompt; i < used; ++i) {
    if (mask(rng)) {
      out.x_t[static_cast<std::size_t>(i)] = mask_token_id;
      out.masked.push_back(i);
    }
  }
  return out;
}

namespace {

// One forward's inputs, built on the host before any replica runs: rows of packed samples,
// padded to the longest row, and the scored positions with their loss weights.
struct SftForward {
  std::vector<std::int64_t> x_t, x_0, positions;
  std::vector<float> token_weights;
  std::vector<std::vector<std::int64_t>> lengths;  // per row: its sequences' lengths
  std::int64_t rows = 0, width = 0;
};

// Runs one forward and its backward on `model`; returns the loss (detached, on the device).
// `weight` 0: a padding pass (data_parallel.h's rank_passes), whose gradients are zeros.
at::Tensor forward_backward(Qwen3LMImpl& model, const SftForward& f, const c10::Device& device,
                            double weight = 1.0) {
  const auto long_cpu = at::TensorOptions().dtype(at::kLong);
  at::Tensor xt = at::tensor(f.x_t, long_cpu).view({f.rows, f.width}).to(device);
  at::Tensor x0 = at::tensor(f.x_0, long_cpu).view({f.rows, f.width}).to(device);
  at::Tensor hidden = f.lengths.size() == 1 && f.lengths[0].size() == 1
                          ? model.hidden_training(xt, x0)
                          : model.hidden_training_rows(xt, x0, f.lengths);
  at::Tensor at_masked = at::tensor(f.positions, long_cpu).to(device);
  at::Tensor log_probs =
      model.logits(hidden.reshape({f.rows * f.width, -1}).index_select(0, at_masked))
          .to(at::kFloat)
          .log_softmax(-1);
  at::Tensor targets = x0.reshape({-1}).index_select(0, at_masked).unsqueeze(1);
  at::Tensor w = at::tensor(f.token_weights, at::TensorOptions().dtype(at::kFloat)).to(device);
  at::Tensor loss = -(log_probs.gather(1, targets).squeeze(1) * w).sum();
  if (weight != 1.0) loss = loss * weight;
  loss.backward();
  return loss.detach();
}

// The batch's noisy copies, drawn sample by sample in batch order (the same draws, packed or not,
// on any number of devices), and each sample's loss weight.
struct NoisedBatch {
  std::vector<SftNoised> noised;
  std::vector<double> weights;  // per sample: 1 / (p * response length * batch size)
};

NoisedBatch noise_batch(const std::vector<const SftSample*>& batch, const ModelConfig& config,
                        std::mt19937_64& rng, SftStepStats* stats) {
  NoisedBatch out;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  for (const SftSample* sample : batch) {
    out.noised.push_back(
        sft_noise(*sample, uniform(rng), config.block_size, config.mask_token_id, rng));
    out.weights.push_back(1.0 /
                          (out.noised.back().p * static_cast<double>(sample->response.size()) *
                           static_cast<double>(batch.size())));
    ++stats->sequences;
    stats->masked_tokens += static_cast<std::int64_t>(out.noised.back().masked.size());
  }
  return out;
}

// The samples with a masked token (the others have no loss term), grouped into rows: one sample a
// row, or as many as fit `pack_length` tokens (0: no packing). Adds each sample's model FLOPs to
// `*model_flops`.
std::vector<std::vector<std::size_t>> pack_rows(const std::vector<SftNoised>& noised,
                                                std::int64_t pack_length, const ModelConfig& config,
                                                double* model_flops) {
  std::vector<std::vector<std::size_t>> rows;
  std::int64_t row_length = 0;
  for (std::size_t i = 0; i < noised.size(); ++i) {
    if (noised[i].masked.empty()) continue;  // nothing masked: no term (short response, small p)
    const auto length = static_cast<std::int64_t>(noised[i].x_0.size());
    if (rows.empty() || pack_length <= 0 || row_length + length > pack_length) {
      rows.emplace_back();
      row_length = 0;
    }
    rows.back().push_back(i);
    row_length += length;
    *model_flops += 3 * (training_sequence_flops(config, length) +
                         lm_head_flops(config, static_cast<std::int64_t>(noised[i].masked.size())));
  }
  return rows;
}

// Forwards of up to `rows_per_forward` rows each, padded to their longest row with a filler
// sequence that sees only itself and that no loss term reads.
std::vector<SftForward> build_forwards(const std::vector<std::vector<std::size_t>>& rows,
                                       const NoisedBatch& batch, int rows_per_forward,
                                       std::int64_t mask_token_id) {
  const std::vector<SftNoised>& noised = batch.noised;
  std::vector<SftForward> forwards;
  const auto per_forward = static_cast<std::size_t>(std::max(1, rows_per_forward));
  for (std::size_t first = 0; first < rows.size(); first += per_forward) {
    const std::size_t last = std::min(rows.size(), first + per_forward);
    SftForward f;
    f.lengths.resize(last - first);
    for (std::size_t r = first; r < last; ++r) {
      for (std::size_t i : rows[r]) {
        f.lengths[r - first].push_back(static_cast<std::int64_t>(noised[i].x_0.size()));
      }
      f.width = std::max<std::int64_t>(
          f.width, std::accumulate(f.lengths[r - first].begin(), f.lengths[r - first].end(),
                                   std::int64_t{0}));
    }
    for (std::size_t r = first; r < last; ++r) {
      const auto row_start = static_cast<std::int64_t>(f.x_0.size());
      for (std::size_t i : rows[r]) {
        const auto offset = static_cast<std::int64_t>(f.x_0.size());
        for (std::int64_t p : noised[i].masked) {
          f.positions.push_back(offset + p);
          f.token_weights.push_back(static_cast<float>(batch.weights[i]));
        }
        f.x_t.insert(f.x_t.end(), noised[i].x_t.begin(), noised[i].x_t.end());
        f.x_0.insert(f.x_0.end(), noised[i].x_0.begin(), noised[i].x_0.end());
      }
      const std::int64_t fill = row_start + f.width - static_cast<std::int64_t>(f.x_0.size());
      if (fill > 0) {
        f.x_t.insert(f.x_t.end(), fill, mask_token_id);
        f.x_0.insert(f.x_0.end(), fill, mask_token_id);
        f.lengths[r - first].push_back(fill);
      }
    }
    f.rows = static_cast<std::int64_t>(last - first);
    forwards.push_back(std::move(f));
  }
  return forwards;
}

// Which forwards each of `replicas` runs: each forward to the replica with the fewest tokens so far
// (ties: the lowest rank).
std::vector<std::vector<std::size_t>> share_out(const std::vector<SftForward>& forwards,
                                                int replicas) {
  std::vector<std::vector<std::size_t>> mine(static_cast<std::size_t>(replicas));
  std::vector<std::int64_t> tokens(static_cast<std::size_t>(replicas), 0);
  for (std::size_t k = 0; k < forwards.size(); ++k) {
    const auto least =
        static_cast<std::size_t>(std::min_element(tokens.begin(), tokens.end()) - tokens.begin());
    mine[least].push_back(k);
    tokens[least] += forwards[k].rows * forwards[k].width;
  }
  return mine;
}

// The forward of fewest token positions (the first of them): what a padding pass repeats.
std::size_t cheapest(const std::vector<SftForward>& forwards) {
  std::size_t best = 0;
  for (std::size_t k = 1; k < forwards.size(); ++k) {
    if (forwards[k].rows * forwards[k].width < forwards[best].rows * forwards[best].width) best = k;
  }
  return best;
}

}  // namespace

Result<std::unique_ptr<SftTrainer>> SftTrainer::create(Qwen3LM model, SftTrainerOptions options) {
  if (!model) return Status::invalid_argument("SftTrainer: no model");
  std::unique_ptr<SftTrainer> trainer(new SftTrainer(std::move(model), std::move(options)));
  DICE_ASSIGN_OR_RETURN(trainer->replicas_,
                        start_training(trainer->model_, trainer->options_, "SftTrainer"));
  return trainer;
}

SftTrainer::SftTrainer(Qwen3LM model, SftTrainerOptions options)
    : model_(std::move(model)), options_(std::move(options)), rng_(options_.seed) {}

Result<SftStepStats> SftTrainer::step(const std::vector<const SftSample*>& batch, double lr) {
  SftStepStats stats;
  if (batch.empty()) return stats;
  const ModelConfig& config = model_->config();
  // Noise every sample first, then group them into rows and the rows into forwards.
  const NoisedBatch noised = noise_batch(batch, config, rng_, &stats);
  const std::vector<std::vector<std::size_t>> rows =
      pack_rows(noised.noised, options_.pack_length, config, &stats.model_flops);
  const std::vector<SftForward> forwards =
      build_forwards(rows, noised, options_.rows_per_forward, config.mask_token_id);
  const int replicas = replicas_->size();
  const std::vector<std::vector<RankPass>> passes = rank_passes(
      share_out(forwards, replicas), replicas_->passes_in_lockstep(), cheapest(forwards));
  std::vector<double> losses(static_cast<std::size_t>(replicas), 0.0);
  std::vector<double> norms(static_cast<std::size_t>(replicas), 0.0);
  Status ran = replicas_->run([&](int rank) -> Status {
    const auto r = static_cast<std::size_t>(rank);
    MasterWeights& masters = replicas_->masters(rank);
    Qwen3LM replica = replicas_->replica(rank);
    try {
      masters.zero_grad();
      at::Tensor total_loss =
          at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(masters.device()));
      for (std::size_t j = 0; j < passes[r].size(); ++j) {
        if (j + 1 == passes[r].size()) replicas_->arm(rank);
        const RankPass& pass = passes[r][j];
        const SftForward& f = forwards[pass.forward];
        if (pass.padding) {
          forward_backward(*replica, f, masters.device(), 0.0);
        } else {
          total_loss += forward_backward(*replica, f, masters.device());
        }
      }
      losses[r] = total_loss.item<double>();  // one device sync per step, not one per forward
      norms[r] = masters.step(lr);
    } catch (const c10::Error& e) {
      return Status::internal(std::string("SftTrainer::step: ") + e.what_without_backtrace());
    }
    return Status::ok_status();
  });
  DICE_RETURN_IF_ERROR(ran);
  for (double loss : losses) stats.loss += loss;
  stats.grad_norm = norms.front();
  stats.forwards = static_cast<std::int64_t>(forwards.size());
  stats.replicas = replicas;
  stats.buckets_overlapped = replicas_->buckets_overlapped();
  return stats;
}

}  // namespace dice
