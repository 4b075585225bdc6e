// InProcessCollective: the sum (or reduce-scatter, or all-gather) of data-parallel replicas that
// live in one process, each driven by its own thread (data_parallel.h): CPU replicas (the CI
// tests), or GPUs in a build without NCCL (the data then goes through host memory: correct, not
// fast). Sums rank 0 + rank 1 + ... in that order on rank 0's device, so a run is deterministic
// and a reduce-scatter's chunk equals that chunk of the sum. A reduce-scatter writes only each
// rank's own chunk, so a reader of another chunk sees its own stale data in the tests, as it
// would over NCCL. A rank that does not arrive within the timeout fails the operation (Timeout)
// for the ranks waiting, never hangs them.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include "learner/parallel/gradient_collective.h"

namespace dice {

class InProcessGroup;

class InProcessCollective : public GradientCollective {
 public:
  int world_size() const override;
  int rank() const override { return rank_; }
  // Queues the bucket; the sum happens in wait(), when every rank is there.
  Status start_sum(std::size_t bucket, const at::Tensor& flat) override;
  Status start_reduce_scatter(std::size_t bucket, const at::Tensor& flat) override;
  Status start_all_gather(std::size_t bucket, const at::Tensor& flat) override;
  Status wait() override;
  void abort(const Status& why) override;

 private:
  friend class InProcessGroup;
  InProcessCollective(InProcessGroup* group, int rank) : group_(group), rank_(rank) {}
  enum class Op { kSum, kReduceScatter, kAllGather };
  struct Queued {
    Op op;
    std::size_t bucket;
    at::Tensor flat;
  };
  Status queue(Op op, std::size_t bucket, const at::Tensor& flat);

  InProcessGroup* group_;
  int rank_;
  std::vector<Queued> queued_;
};

// The ranks' meeting point; owns one collective per rank.
class InProcessGroup {
 public:
  InProcessGroup(int world_size, std::chrono::milliseconds timeout);
  InProcessCollective* rank(int r) { return ranks_[static_cast<std::size_t>(r)].get(); }
  int world_size() const { return static_cast<int>(ranks_.size()); }

 private:
  friend class InProcessCollective;
  // One operation of every rank's; the last to arrive does it for all.
  Status meet(int rank, InProcessCollective::Op op, std::size_t bucket, const at::Tensor& flat);
  void combine(InProcessCollective::Op op);  // under mu_, every rank arrived
  void abort(int rank, const Status& why);

  std::vector<std::unique_ptr<InProcessCollective>> ranks_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<at::Tensor> arrived_;  // this round's contributions, by rank
  std::vector<std::size_t> buckets_;
  std::vector<InProcessCollective::Op> ops_;
  int count_ = 0;
  std::uint64_t round_ = 0;
  Status failed_;  // sticky: a round that failed fails every later one
};

}  // namespace dice
