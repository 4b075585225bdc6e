// What a GradientReducer sums its buckets through: one object per rank of a data-parallel group.
// Implementations: NcclGradientCollective (GPUs, nccl_gradient_collective.h) and
// InProcessCollective (replicas in one process on the CPU, in_process_collective.h).
//
// A replicated optimizer (every rank steps every weight) needs start_sum alone; a sharded one
// (optimizer_shard.h: rank r steps only chunk r of each bucket) needs start_reduce_scatter for
// the gradients and start_all_gather for the updated weights, and never start_sum.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>

#include "common/status.h"

namespace dice {

class GradientCollective {
 public:
  virtual ~GradientCollective() = default;
  virtual int world_size() const = 0;
  virtual int rank() const = 0;
  // Starts summing `flat` (this rank's copy of bucket `bucket`, contiguous) into every rank's
  // copy, in place; may return before the sum is done. Every rank starts the same buckets in the
  // same order. Called from the thread the backward pass runs on (after the gradients in `flat`
  // were produced on the current stream).
  virtual Status start_sum(std::size_t bucket, const at::Tensor& flat) = 0;
  // `flat` (numel a multiple of world_size()) is cut into world_size() equal chunks. Starts
  // summing chunk rank() over every rank's copy into this rank's chunk rank(), in place (NCCL's
  // reduce-scatter); the other chunks of `flat` are left unspecified. Ordered like start_sum.
  virtual Status start_reduce_scatter(std::size_t bucket, const at::Tensor& flat) = 0;
  // `flat` cut as above: starts copying every rank's chunk r into chunk r of every rank's
  // `flat`, in place (NCCL's all-gather), so each rank ends with every rank's own chunk.
  virtual Status start_all_gather(std::size_t bucket, const at::Tensor& flat) = 0;
  // Waits until every started operation is in place (and visible to the caller's stream). A
  // failure leaves the collective unusable.
  virtual Status wait() = 0;
  // This rank failed (its forward threw, say) and will start no more sums: the other ranks'
  // waits fail at once instead of at their deadline.
  virtual void abort(const Status& why) = 0;
};

}  // namespace dice
