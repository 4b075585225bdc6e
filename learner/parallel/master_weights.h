// MasterWeights: the optimizer side both trainers share (learner/train/policy_trainer.h for RL,
// learner/train/sft_trainer.h for SFT). It owns the model's parameters' gradients between
// zero_grad() and step():
//
//   zero_grad(); <forwards and backwards that accumulate into the parameters' .grad>; step(lr)
//
// step() copies the gradients into float32 master weights (separate tensors when the model is
// not float32, or when they live in host memory: optimizer_on_cpu), clips their global norm, runs
// one AdamW step on the masters and writes them back into the model (rounded to its dtype).
// Why float32 masters: an lr of 1e-6 is below bf16's resolution for most weights.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "model/qwen3.h"
#include "options/learner_options.h"

namespace torch::optim {
class AdamW;
}
namespace torch::serialize {
class OutputArchive;
}

namespace dice {

class GradientReducer;
class OptimizerShard;

// What the replicated optimizer below and the sharded one (optimizer_shard.h) share: their AdamW
// over float32 `masters`, its lr for the next step (lr <= 0: unchanged), its step count, and the
// archive entries of a saved state (count, master.<i> on the CPU, adamw).
std::unique_ptr<torch::optim::AdamW> make_adamw(const std::vector<at::Tensor>& masters,
                                                const OptimizerOptions& options);
void set_adamw_lr(torch::optim::AdamW& adamw, double lr);
std::int64_t adamw_steps(const torch::optim::AdamW& adamw);
void write_optimizer_state(const std::vector<at::Tensor>& masters, const torch::optim::AdamW& adamw,
                           torch::serialize::OutputArchive& archive);

class MasterWeights {
 public:
  // Throws c10::Error (callers turn it into a Status) when LibTorch cannot allocate the masters.
  MasterWeights(Qwen3LMImpl& model, const OptimizerOptions& options, bool on_cpu);
  // Sharded (learner.data_parallel.shard: optimizer): `shard` (optimizer_shard.h) holds this
  // rank's part of the masters and moments, and steps, saves and loads them; no masters here.
  // `process_shards`: every rank's of this process, in rank order; the trainers save from rank
  // 0, whose save() therefore writes every rank's file (OptimizerShard::shard_file).
  MasterWeights(Qwen3LMImpl& model, OptimizerShard* shard,
                std::vector<const OptimizerShard*> process_shards);
  ~MasterWeights();
  MasterWeights(const MasterWeights&) = delete;
  MasterWeights& operator=(const MasterWeights&) = delete;

  void zero_grad();
  // One AdamW step at `lr` (the options' lr when lr <= 0); returns the global gradient norm
  // before clipping. Throws c10::Error (a failed data-parallel sum included).
  double step(double lr = 0);

  // Data-parallel training (data_parallel.h): the gradients live in `reducer`'s buckets;
  // zero_grad() zeroes them there and step() first waits for their sum over the ranks.
  void set_reducer(GradientReducer* reducer) { reducer_ = reducer; }

  const c10::Device& device() const { return device_; }  // where the model's parameters are

  // AdamW steps taken, by its own count (kept in save(), so a loaded state goes on counting): 0
  // before the first. What a resumed trainer's lr warm-up continues from.
  std::int64_t steps() const;

  // The optimizer's whole state, for a resume (learner/resume/resume_store.h): the float32 masters
  // and AdamW's moments and step counts, in one LibTorch archive at `path`. load() puts them back
  // and writes the masters into the model, so the weights are the ones saved to the last bit.
  // IOError / InvalidArgument naming the file (a different model shape included).
  Status save(const std::string& path) const;
  Status load(const std::string& path);

 private:
  std::vector<at::Tensor> params_;   // the model's, in its dtype
  std::vector<at::Tensor> masters_;  // float32 copies the optimizer steps (== params_ if fp32)
  bool separate_ = false;
  double grad_clip_norm_;
  c10::Device device_{at::kCPU};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  GradientReducer* reducer_ = nullptr;
  OptimizerShard* shard_ = nullptr;
  std::vector<const OptimizerShard*> process_shards_;
};

}  // namespace dice
