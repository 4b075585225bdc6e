#include "learner/parallel/nccl_gradient_collective.h"

#include <ATen/ATen.h>
#ifdef DICE_WITH_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <string>
#include <thread>

#include "common/log.h"

namespace dice {
namespace {

Result<nccl::DataType> nccl_type(at::ScalarType type) {
  switch (type) {
    case at::kBFloat16:
      return nccl::DataType::kBf16;
    case at::kHalf:
      return nccl::DataType::kF16;
    case at::kFloat:
      return nccl::DataType::kF32;
    default:
      return Status::invalid_argument(std::string("data-parallel over NCCL: gradients of type ") +
                                      c10::toString(type) + " are not supported");
  }
}

}  // namespace

Result<std::vector<std::unique_ptr<NcclGradientCollective>>> NcclGradientCollective::create_group(
    const std::vector<int>& devices, std::chrono::milliseconds timeout) {
#ifndef DICE_WITH_TORCH_CUDA
  (void)devices;
  (void)timeout;
  return Status::unavailable("data-parallel over NCCL: LibTorch has no CUDA in this build");
#else
  if (devices.size() < 2) {
    return Status::invalid_argument("data-parallel over NCCL: needs two devices or more");
  }
  DICE_ASSIGN_OR_RETURN(std::string id, nccl::new_unique_id());
  const int world = static_cast<int>(devices.size());
  std::vector<Result<std::unique_ptr<nccl::Communicator>>> made;
  for (std::size_t r = 0; r < devices.size(); ++r)
    made.emplace_back(Status::internal("not joined"));
  std::vector<std::thread> joiners;
  for (int r = 0; r < world; ++r) {
    joiners.emplace_back([&, r] {
      made[static_cast<std::size_t>(r)] =
          nccl::Communicator::create(id, world, r, devices[static_cast<std::size_t>(r)], timeout);
    });
  }
  for (std::thread& t : joiners) t.join();
  std::vector<std::unique_ptr<NcclGradientCollective>> out;
  for (auto& comm : made) {
    if (!comm.ok()) return comm.status().with_context("data-parallel communicators");
    out.push_back(std::unique_ptr<NcclGradientCollective>(
        new NcclGradientCollective(std::move(*comm), timeout)));
  }
  DICE_LOG(Info) << "data-parallel NCCL communicators ready" << kv("ranks", world)
                 << kv("nccl", nccl::describe_nccl());
  return out;
#endif
}

Status NcclGradientCollective::start_sum(std::size_t bucket, const at::Tensor& flat) {
  return start(&nccl::Communicator::start_all_reduce_sum, bucket, flat);
}

Status NcclGradientCollective::start_reduce_scatter(std::size_t bucket, const at::Tensor& flat) {
  return start(&nccl::Communicator::start_reduce_scatter_sum, bucket, flat);
}

Status NcclGradientCollective::start_all_gather(std::size_t bucket, const at::Tensor& flat) {
  return start(&nccl::Communicator::start_all_gather, bucket, flat);
}

Status NcclGradientCollective::start(Start start, std::size_t bucket, const at::Tensor& flat) {
  DICE_ASSIGN_OR_RETURN(nccl::DataType type, nccl_type(flat.scalar_type()));
  void* after = nullptr;
#ifdef DICE_WITH_TORCH_CUDA
  after = c10::cuda::getCurrentCUDAStream(flat.device().index()).stream();
#endif
  nccl::DeviceBuffer buffer{flat.data_ptr(), static_cast<std::size_t>(flat.numel()), type};
  return ((*comm_).*start)(buffer, after, timeout_)
      .with_context("gradient bucket " + std::to_string(bucket));
}

Status NcclGradientCollective::wait() {
  return comm_->wait_all_reduces(timeout_);
}

void NcclGradientCollective::abort(const Status& why) {
  DICE_LOG(Warn) << "data-parallel rank failed; aborting its communicator" << kv("rank", rank())
                 << kv("error", why.to_string());
  comm_->abort();  // this rank's own thread: no other thread uses its communicator
}

}  // namespace dice
