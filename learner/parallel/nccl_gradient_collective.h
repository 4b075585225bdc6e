// NcclGradientCollective: data-parallel gradient sums between GPUs over NCCL, one communicator
// per rank (model/nccl/nccl_communicator.h: deadlines everywhere, aborted on failure). A sum
// runs on the communicator's stream after the gradients the backward pass has enqueued on the
// device's current stream, so it overlaps the rest of the backward.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "learner/parallel/gradient_collective.h"
#include "model/nccl/nccl_communicator.h"

namespace dice {

class NcclGradientCollective : public GradientCollective {
 public:
  // One collective per CUDA device of `devices` (rank r on devices[r]), all in this process: the
  // communicators are joined on one thread each, since NCCL's init waits for every rank.
  // Unavailable without NCCL or without LibTorch's CUDA half; needs two devices or more.
  static Result<std::vector<std::unique_ptr<NcclGradientCollective>>> create_group(
      const std::vector<int>& devices, std::chrono::milliseconds timeout);

  int world_size() const override { return comm_->world_size(); }
  int rank() const override { return comm_->rank(); }
  Status start_sum(std::size_t bucket, const at::Tensor& flat) override;
  Status start_reduce_scatter(std::size_t bucket, const at::Tensor& flat) override;
  Status start_all_gather(std::size_t bucket, const at::Tensor& flat) override;
  Status wait() override;
  void abort(const Status& why) override;

 private:
  NcclGradientCollective(std::unique_ptr<nccl::Communicator> comm,
                         std::chrono::milliseconds timeout)
      : comm_(std::move(comm)), timeout_(timeout) {}
  using Start = Status (nccl::Communicator::*)(const nccl::DeviceBuffer&, void*,
                                               std::chrono::milliseconds);
  // `start` on `flat`, after the work enqueued so far on its device's current stream.
  Status start(Start start, std::size_t bucket, const at::Tensor& flat);

  std::unique_ptr<nccl::Communicator> comm_;
  std::chrono::milliseconds timeout_;
};

}  // namespace dice
