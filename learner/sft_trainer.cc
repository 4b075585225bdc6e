#include "learner/sft_trainer.h"

#include <ATen/ATen.h>

#include <string>

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
    for (const SftSample* sample : batch) {
      SftNoised noised =
          sft_noise(*sample, uniform(rng_), config.block_size, config.mask_token_id, rng_);
      ++stats.sequences;
      if (noised.masked.empty()) continue;  // nothing masked: no term (a short response, small p)
      const auto length = static_cast<std::int64_t>(noised.x_0.size());
      at::Tensor x_t = at::tensor(noised.x_t, long_cpu).view({1, length}).to(device);
      at::Tensor x_0 = at::tensor(noised.x_0, long_cpu).view({1, length}).to(device);
      at::Tensor masked = at::tensor(noised.masked, long_cpu).to(device);
      at::Tensor hidden = model_->hidden_training(x_t, x_0).squeeze(0).index_select(0, masked);
      at::Tensor log_probs = model_->logits(hidden).to(at::kFloat).log_softmax(-1);
      at::Tensor targets = x_0.squeeze(0).index_select(0, masked).unsqueeze(1);
      at::Tensor nll = -log_probs.gather(1, targets).sum();
      const double scale = 1.0 / (noised.p * static_cast<double>(sample->response.size()) *
                                  static_cast<double>(batch.size()));
      at::Tensor loss = nll * scale;
      loss.backward();
      stats.loss += loss.item<double>();
      stats.masked_tokens += static_cast<std::int64_t>(noised.masked.size());
    }
    stats.grad_norm = masters_->step(lr);
  } catch (const c10::Error& e) {
    return Status::internal(std::string("SftTrainer::step: ") + e.what_without_backtrace());
  }
  return stats;
}

}  // namespace dice
