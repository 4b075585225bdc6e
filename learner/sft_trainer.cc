#include "learner/sft_trainer.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "learner/training_flops.h"

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

Result<std::unique_ptr<SftTrainer>> SftTrainer::create(Qwen3LM model, SftTrainerOptions options) {
  if (!model) return Status::invalid_argument("SftTrainer: no model");
  try {
    return std::unique_ptr<SftTrainer>(new SftTrainer(std::move(model), std::move(options)));
  } catch (const c10::Error& e) {
    return Status::internal(std::string("SftTrainer: ") + e.what_without_backtrace());
  }
}

SftTrainer::SftTrainer(Qwen3LM model, SftTrainerOptions options)
    : model_(std::move(model)), options_(std::move(options)), rng_(options_.seed) {
  model_->train();
  model_->model->activation_checkpointing = options_.activation_checkpointing;
  masters_ =
      std::make_unique<MasterWeights>(*model_, options_.optimizer, options_.optimizer_on_cpu);
}

Result<SftStepStats> SftTrainer::step(const std::vector<const SftSample*>& batch, double lr) {
  SftStepStats stats;
  if (batch.empty()) return stats;
  const ModelConfig& config = model_->config();
  const c10::Device device = masters_->device();
  const auto long_cpu = at::TensorOptions().dtype(at::kLong);
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  try {
    masters_->zero_grad();
    // Noise every sample first (the same draws, in the same order, packed or not), then group
    // them into rows: one sample per row, or as many as fit options_.pack_length.
    std::vector<SftNoised> noised;
    std::vector<double> weights;  // per sample: 1 / (p * response length * batch size)
    for (const SftSample* sample : batch) {
      noised.push_back(
          sft_noise(*sample, uniform(rng_), config.block_size, config.mask_token_id, rng_));
      weights.push_back(1.0 / (noised.back().p * static_cast<double>(sample->response.size()) *
                               static_cast<double>(batch.size())));
      ++stats.sequences;
      stats.masked_tokens += static_cast<std::int64_t>(noised.back().masked.size());
    }
    std::vector<std::vector<std::size_t>> rows;
    std::int64_t row_length = 0;
    for (std::size_t i = 0; i < noised.size(); ++i) {
      if (noised[i].masked.empty()) continue;  // nothing masked: no term (short response, small p)
      const auto length = static_cast<std::int64_t>(noised[i].x_0.size());
      if (rows.empty() || options_.pack_length <= 0 || row_length + length > options_.pack_length) {
        rows.emplace_back();
        row_length = 0;
      }
      rows.back().push_back(i);
      row_length += length;
      stats.model_flops +=
          3 * (training_sequence_flops(config, length) +
               lm_head_flops(config, static_cast<std::int64_t>(noised[i].masked.size())));
    }
    // Forwards of up to rows_per_forward rows each, padded to their longest row with a filler
    // sequence that sees only itself and that no loss term reads.
    const auto per_forward = static_cast<std::size_t>(std::max(1, options_.rows_per_forward));
    at::Tensor total_loss = at::zeros({}, at::TensorOptions().dtype(at::kFloat).device(device));
    for (std::size_t first = 0; first < rows.size(); first += per_forward) {
      const std::size_t last = std::min(rows.size(), first + per_forward);
      std::vector<std::vector<std::int64_t>> lengths(last - first);
      std::int64_t width = 0;
      for (std::size_t r = first; r < last; ++r) {
        for (std::size_t i : rows[r]) {
          lengths[r - first].push_back(static_cast<std::int64_t>(noised[i].x_0.size()));
        }
        width = std::max<std::int64_t>(
            width,
            std::accumulate(lengths[r - first].begin(), lengths[r - first].end(), std::int64_t{0}));
      }
      std::vector<std::int64_t> x_t, x_0, positions;
      std::vector<float> token_weights;
      for (std::size_t r = first; r < last; ++r) {
        const auto row_start = static_cast<std::int64_t>(x_0.size());
        for (std::size_t i : rows[r]) {
          const auto offset = static_cast<std::int64_t>(x_0.size());
          for (std::int64_t p : noised[i].masked) {
            positions.push_back(offset + p);
            token_weights.push_back(static_cast<float>(weights[i]));
          }
          x_t.insert(x_t.end(), noised[i].x_t.begin(), noised[i].x_t.end());
          x_0.insert(x_0.end(), noised[i].x_0.begin(), noised[i].x_0.end());
        }
        const std::int64_t fill = row_start + width - static_cast<std::int64_t>(x_0.size());
        if (fill > 0) {
          x_t.insert(x_t.end(), fill, config.mask_token_id);
          x_0.insert(x_0.end(), fill, config.mask_token_id);
          lengths[r - first].push_back(fill);
        }
      }
      const auto row_count = static_cast<std::int64_t>(last - first);
      at::Tensor xt = at::tensor(x_t, long_cpu).view({row_count, width}).to(device);
      at::Tensor x0 = at::tensor(x_0, long_cpu).view({row_count, width}).to(device);
      at::Tensor hidden = lengths.size() == 1 && lengths[0].size() == 1
                              ? model_->hidden_training(xt, x0)
                              : model_->hidden_training_rows(xt, x0, lengths);
      at::Tensor at_masked = at::tensor(positions, long_cpu).to(device);
      at::Tensor log_probs =
          model_->logits(hidden.reshape({row_count * width, -1}).index_select(0, at_masked))
              .to(at::kFloat)
              .log_softmax(-1);
      at::Tensor targets = x0.reshape({-1}).index_select(0, at_masked).unsqueeze(1);
      at::Tensor w = at::tensor(token_weights, at::TensorOptions().dtype(at::kFloat)).to(device);
      at::Tensor loss = -(log_probs.gather(1, targets).squeeze(1) * w).sum();
      loss.backward();
      total_loss += loss.detach();
      ++stats.forwards;
    }
    stats.loss = total_loss.item<double>();  // one device sync per step, not one per forward
    stats.grad_norm = masters_->step(lr);
  } catch (const c10::Error& e) {
    return Status::internal(std::string("SftTrainer::step: ") + e.what_without_backtrace());
  }
  return stats;
}

}  // namespace dice
