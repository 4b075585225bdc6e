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
//
// With shard: parameters (ZeRO-3, parameter_shards.h) each replica is first made whole and alike
// as above, then its decoder layers are taken into ParameterShards: rank r keeps chunk r of each
// layer's weights, and an OptimizerShard (created with those shards) steps the float32 masters of
// its chunks as well as its chunk of the buckets of the weights outside the layers (embeddings,
// final norm, LM head: whole on every rank, their gradients reduce-scattered by the reducer, as
// under shard: optimizer). When the weights are whole:
//
//   in a step (run)      every rank's model has its hooks set: a layer is all-gathered before
//                        its forward and before its backward recomputation and freed after; GPU
//                        0 frees its whole layers first. Peak: one layer whole plus the chunks.
//   end of a step        every rank all-gathers every layer (after the optimizer's step); GPU 0
//                        keeps them, the others free them again; the hooks are unset.
//   between steps        GPU 0's model (the caller's) holds the whole weights without hooks:
//                        the policy checkpoint, the weight push, resume, the learner's own no-grad
//                        forwards (old and reference log-probs, evaluation) and
//                        hf_named_parameters read it as under the other modes. The other GPUs
//                        hold their chunks only.
//
// GPU 0 rather than every GPU, and only between steps: its whole weights (2 bytes a parameter,
// shard_memory.h counts them) are what those readers need, and during a step every GPU holds
// one layer plus its chunks. The price is one all-gather of the layers per optimizer step.
// Every forward and backward pass of a step is then a collective of all ranks, so every rank
// must run as many passes (passes_in_lockstep(), rank_passes()). A step that fails leaves GPU 0's
// layers empty (the aborted collective cannot gather them): the trainer's update fails and the
// learner's run ends with it, as under the other modes. Needs activation checkpointing on the
// model (InvalidArgument otherwise).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
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
class ParameterShards;

struct DataParallelOptions {
  // Devices of the replicas; the first must be the model's own. Empty: the model's device alone.
  std::vector<c10::Device> devices;
  BucketPlanOptions buckets;
  // How long a rank waits for the others in one sum before the step fails (a dead or stuck rank).
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
  // Whether each replica's optimizer holds all of the masters and moments or its 1/N, and
  // whether its decoder layers' weights are sharded too (parameters).
  ShardMode shard = ShardMode::kReplica;
};

// One forward-and-backward pass a rank runs in a step: an index into the step's forwards, and
// whether it is a zero-weighted repeat that only keeps the rank in step with the others.
struct RankPass {
  std::size_t forward = 0;
  bool padding = false;
};

// The passes of each rank, from `mine` (each rank's forwards). Without `lockstep`, each rank's
// own. With it (shard: parameters: every pass all-gathers and reduce-scatters each layer with
// every rank), each rank's own followed by repeats of `filler` (the step's cheapest forward) up
// to the longest list, so every rank runs as many passes and arms its reducer before the same
// one: a rank with fewer forwards runs zero-weighted repeats, as FSDP's uneven inputs must.
std::vector<std::vector<RankPass>> rank_passes(const std::vector<std::vector<std::size_t>>& mine,
                                               bool lockstep, std::size_t filler);

// The replicas the learner's settings ask for, for a model on `home`: on a GPU, the first
// settings.devices visible GPUs (0 = all); on the CPU, the CPU alone. InvalidArgument (naming
// learner.data_parallel.devices) when more GPUs are asked for than are visible.
Result<DataParallelOptions> data_parallel_options(const DataParallelSettings& settings,
                                                  const c10::Device& home);

class DataParallel {
 public:
  // Copies `model` to every other device. InvalidArgument for a device list that does not start
  // at the model's device, or for shard: parameters on a model without activation
  // checkpointing; Unavailable when NCCL is needed (GPUs) and missing; Internal when LibTorch
  // fails (out of memory, say); a failed collective's error (shard: parameters gathers GPU 0's
  // weights back once).
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

  // One training step: fn(rank) for every rank, each on a thread of its own (with one device,
  // on the caller's), and waits for all. A rank whose fn fails aborts its collective, so the
  // others fail fast rather than wait out the timeout; returns the lowest failing rank's status.
  // With shard: parameters the layers are sharded while fn runs and GPU 0's gathered whole
  // after it (the header comment's table).
  Status run(const std::function<Status(int rank)>& fn);

  // Whether every rank must run as many forward-and-backward passes in a step (rank_passes):
  // shard: parameters.
  bool passes_in_lockstep() const { return !layers_.empty(); }

  // The optimizer state of a resume (MasterWeights::save/load; one file per rank when sharded).
  // load() reads every rank's and, with shard: parameters, gathers GPU 0's whole weights from the
  // chunks it loaded.
  Status save_optimizer_state(const std::string& path) const;
  Status load_optimizer_state(const std::string& path);

 private:
  DataParallel() = default;
  // fn(rank) on every rank's thread, as run() does, without the step's bracket.
  Status on_ranks(const std::function<Status(int rank)>& fn);
  // shard: parameters: every layer gathered on every rank, kept whole on GPU 0 only.
  Status gather_on_gpu0();
  // The step of `rank` under shard: parameters: hooks set around fn, then gather_on_gpu0's part.
  Status sharded_step(int rank, const std::function<Status(int rank)>& fn);

  std::vector<Qwen3LM> replicas_;
  std::unique_ptr<InProcessGroup> in_process_;
  std::vector<std::unique_ptr<GradientCollective>> nccl_;
  std::vector<GradientCollective*> collectives_;
  std::vector<std::unique_ptr<GradientReducer>> own_reducers_;  // shard: replica
  std::vector<std::unique_ptr<ParameterShards>> layers_;        // shard: parameters
  std::vector<std::unique_ptr<OptimizerShard>> shards_;         // shard: optimizer, parameters
  std::vector<GradientReducer*> reducers_;                      // either's, by rank
  std::vector<std::unique_ptr<MasterWeights>> masters_;
};

}  // namespace dice
