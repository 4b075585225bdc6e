#include "learner/parallel/in_process_collective.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <string>

namespace dice {

int InProcessCollective::world_size() const {
  return group_->world_size();
}

Status InProcessCollective::start_sum(std::size_t bucket, const at::Tensor& flat) {
  return queue(Op::kSum, bucket, flat);
}

Status InProcessCollective::start_reduce_scatter(std::size_t bucket, const at::Tensor& flat) {
  return queue(Op::kReduceScatter, bucket, flat);
}

Status InProcessCollective::start_all_gather(std::size_t bucket, const at::Tensor& flat) {
  return queue(Op::kAllGather, bucket, flat);
}

Status InProcessCollective::queue(Op op, std::size_t bucket, const at::Tensor& flat) {
  if (op != Op::kSum && flat.numel() % world_size() != 0) {
    return Status::invalid_argument(
        "data-parallel bucket " + std::to_string(bucket) + " of " + std::to_string(flat.numel()) +
        " elements does not split into " + std::to_string(world_size()) + " equal chunks");
  }
  queued_.push_back({op, bucket, flat});
  return Status::ok_status();
}

Status InProcessCollective::wait() {
  std::vector<Queued> queued;
  queued.swap(queued_);
  for (const Queued& q : queued) DICE_RETURN_IF_ERROR(group_->meet(rank_, q.op, q.bucket, q.flat));
  return Status::ok_status();
}

void InProcessCollective::abort(const Status& why) {
  group_->abort(rank_, why);
}

InProcessGroup::InProcessGroup(int world_size, std::chrono::milliseconds timeout)
    : timeout_(timeout),
      arrived_(static_cast<std::size_t>(world_size)),
      buckets_(static_cast<std::size_t>(world_size)),
      ops_(static_cast<std::size_t>(world_size)) {
  for (int r = 0; r < world_size; ++r) {
    ranks_.push_back(std::unique_ptr<InProcessCollective>(new InProcessCollective(this, r)));
  }
}

Status InProcessGroup::meet(int rank, InProcessCollective::Op op, std::size_t bucket,
                            const at::Tensor& flat) {
  std::unique_lock<std::mutex> lock(mu_);
  DICE_RETURN_IF_ERROR(failed_);
  const auto r = static_cast<std::size_t>(rank);
  arrived_[r] = flat;
  buckets_[r] = bucket;
  ops_[r] = op;
  const std::uint64_t round = round_;
  if (++count_ < world_size()) {
    if (!cv_.wait_for(lock, timeout_, [&] { return round_ != round || !failed_.ok(); })) {
      failed_ = Status::timeout("data-parallel sum of bucket " + std::to_string(bucket) +
                                ": not every rank arrived within " +
                                std::to_string(timeout_.count()) + " ms");
      cv_.notify_all();
    }
    return failed_;
  }
  // The last to arrive works for everyone.
  try {
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
      if (buckets_[i] != bucket || ops_[i] != op || arrived_[i].numel() != flat.numel()) {
        failed_ = Status::internal("data-parallel ranks out of step: rank " + std::to_string(i) +
                                   " summed bucket " + std::to_string(buckets_[i]) + ", rank " +
                                   std::to_string(rank) + " bucket " + std::to_string(bucket));
      }
    }
    if (failed_.ok()) combine(op);
  } catch (const c10::Error& e) {
    failed_ = Status::internal(std::string("data-parallel sum: ") + e.what_without_backtrace());
  }
  for (at::Tensor& t : arrived_) t = at::Tensor();
  count_ = 0;
  ++round_;
  cv_.notify_all();
  return failed_;
}

void InProcessGroup::combine(InProcessCollective::Op op) {
  // One rank (a sharded optimizer on one device): every operation leaves its buffer as it is.
  if (arrived_.size() == 1) return;
  at::NoGradGuard no_grad;
  const std::int64_t chunk = arrived_[0].numel() / world_size();
  auto chunk_of = [&](std::size_t holder, std::size_t owner) {
    return arrived_[holder].narrow(0, static_cast<std::int64_t>(owner) * chunk, chunk);
  };
  if (op == InProcessCollective::Op::kAllGather) {
    for (std::size_t owner = 0; owner < arrived_.size(); ++owner) {
      for (std::size_t holder = 0; holder < arrived_.size(); ++holder) {
        if (holder != owner) chunk_of(holder, owner).copy_(chunk_of(owner, owner));
      }
    }
    return;
  }
  at::Tensor total = arrived_[0].clone();
  for (std::size_t i = 1; i < arrived_.size(); ++i) total += arrived_[i].to(total.device());
  if (op == InProcessCollective::Op::kSum) {
    for (at::Tensor& t : arrived_) t.copy_(total);
    return;
  }
  for (std::size_t r = 0; r < arrived_.size(); ++r) {
    chunk_of(r, r).copy_(total.narrow(0, static_cast<std::int64_t>(r) * chunk, chunk));
  }
}

void InProcessGroup::abort(int rank, const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failed_.ok()) {
    failed_ = Status::aborted("data-parallel rank " + std::to_string(rank) +
                              " failed: " + why.to_string());
  }
  cv_.notify_all();
}

}  // namespace dice
