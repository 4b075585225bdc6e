// DataParallel: the learner's model trained on several devices of one process as one model.
// Every device holds a replica and its own optimizer state (master_weights.h); each batch is
// split between them, each replica runs its shard's forwards and backwards on a thread of its
// own, their gradients are summed bucket by bucket while the backward still runs
// (gradient_reducer.h), and every replica then takes the same AdamW step on the same sum, so the
// replicas stay equal without a broadcast of weights. Replica 0 is the model the caller passed
// in: the one the learner checkpoints and pushes to rollout workers.
//
// Sums go over NCCL between GPUs (nccl_gradient_collective.h) and through memory between CPU
// replicas (in_process_collective.h: the CPU tests, and GPUs in a build without NCCL). With one
// device there is no reducer and no thread: exactly the one-device trainer.
//
// With shard: optimizer (optimizer_shard.h) every replica still holds the whole bf16 model and
// runs its forwards and backwards as above, but its optimizer holds only 1/N of the float32
// masters and AdamW moments: gradients are reduce-scattered instead of summed, each GPU steps its
// chunk of every bucket, and the updated weights are all-gathered. That path runs on one device
// too (through a one-rank in-process collective), so its code is exercised on a single GPU.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "common/status.h"
#include "learner/parallel/gradient_buckets.h"
#include "learner/parallel/master_weights.h"
#include "model/qwen3.h"
#include "options/learner_options.h"

namespace dice {

class GradientCollective;
class GradientReducer;
class InProcessGroup;
class OptimizerShard;

struct DataParallelOptions {
  // Devices of the replicas; the first must be the model's own. Empty: the model's device alone.
  std::vector<c10::Device> devices;
  BucketPlanOptions buckets;
  // How long a rank waits for the others in one sum before the step fails (a dead or stuck rank).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // Whether each replica's optimizer holds all of the masters and moments or its 1/N.
  ShardMode shard = ShardMode::kReplica;
};

// The replicas the learner's settings ask for, for a model on `home`: on a GPU, the first
// settings.devices visible GPUs (0 = all); on the CPU, the CPU alone. InvalidArgument (naming
// learner.data_parallel.devices) when more GPUs are asked for than are visible.
Result<DataParallelOptions> data_parallel_options(const DataParallelSettings& settings,
                                                  const c10::Device& home);

class DataParallel {
 public:
  // Copies `model` to every other device. InvalidArgument for a device list that does not start
  // at the model's device; Unavailable when NCCL is needed (GPUs) and missing; Internal when
  // LibTorch fails (out of memory, say).
  static Result<std::unique_ptr<DataParallel>> create(Qwen3LM model,
                                                      const OptimizerOptions& optimizer,
                                                      bool optimizer_on_cpu,
                                                      const DataParallelOptions& options);
  ~DataParallel();

  int size() const { return static_cast<int>(replicas_.size()); }
  Qwen3LM replica(int rank) const { return replicas_[static_cast<std::size_t>(rank)]; }
  MasterWeights& masters(int rank) { return *masters_[static_cast<std::size_t>(rank)]; }
  // Before the last backward of a rank's update (a no-op with one device).
  void arm(int rank);
  // Buckets of rank 0's last update summed during its backward (0 with one device).
  std::size_t buckets_overlapped() const;

  // fn(rank) for every rank, each on a thread of its own (with one device, on the caller's),
  // and waits for all. A rank whose fn fails aborts its collective, so the others fail fast
  // rather than wait out the timeout; returns the lowest failing rank's status.
  Status run(const std::function<Status(int rank)>& fn);

 private:
  DataParallel() = default;

  std::vector<Qwen3LM> replicas_;
  std::unique_ptr<InProcessGroup> in_process_;
  std::vector<std::unique_ptr<GradientCollective>> nccl_;
  std::vector<GradientCollective*> collectives_;
  std::vector<std::unique_ptr<GradientReducer>> own_reducers_;  // shard: replica
  std::vector<std::unique_ptr<OptimizerShard>> shards_;         // shard: optimizer
  std::vector<GradientReducer*> reducers_;                      // either's, by rank
  std::vector<std::unique_ptr<MasterWeights>> masters_;
};

}  // namespace dice
