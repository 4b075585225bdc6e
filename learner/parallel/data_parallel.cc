#include "learner/parallel/data_parallel.h"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <exception>
#include <set>
#include <string>
#include <thread>

#include "learner/parallel/gradient_reducer.h"
#include "learner/parallel/in_process_collective.h"
#include "learner/parallel/nccl_gradient_collective.h"
#include "learner/parallel/optimizer_shard.h"
#include "learner/parallel/parameter_shards.h"
#include "model/nccl/nccl_communicator.h"
#include "model/torch_compat.h"

namespace dice {
namespace {

// The parameters of `model` outside its decoder layers (embeddings, final norm, LM head), in
// parameters() order: what the reducer and its buckets keep under shard: parameters.
std::vector<at::Tensor> outside_layers(Qwen3LMImpl& model) {
  std::set<const c10::TensorImpl*> in_layers;
  for (auto& layer : model.model->layers) {
    for (const at::Tensor& p : layer->parameters()) in_layers.insert(p.unsafeGetTensorImpl());
  }
  std::vector<at::Tensor> out;
  for (const at::Tensor& p : model.parameters()) {
    if (in_layers.count(p.unsafeGetTensorImpl()) == 0) out.push_back(p);
  }
  return out;
}

// Sets a model's layer hooks for a scope, and unsets them however it ends.
class HooksSet {
 public:
  HooksSet(Qwen3ModelImpl& model, LayerParameterHooks* hooks) : model_(model) {
    model_.parameter_hooks = hooks;
  }
  ~HooksSet() { model_.parameter_hooks = nullptr; }
  HooksSet(const HooksSet&) = delete;
  HooksSet& operator=(const HooksSet&) = delete;

 private:
  Qwen3ModelImpl& model_;
};

}  // namespace

std::vector<std::vector<RankPass>> rank_passes(const std::vector<std::vector<std::size_t>>& mine,
                                               bool lockstep, std::size_t filler) {
  std::size_t most = 0;
  for (const auto& forwards : mine) most = std::max(most, forwards.size());
  std::vector<std::vector<RankPass>> out(mine.size());
  for (std::size_t r = 0; r < mine.size(); ++r) {
    for (std::size_t f : mine[r]) out[r].push_back({f, false});
    while (lockstep && out[r].size() < most) out[r].push_back({filler, true});
  }
  return out;
}

Result<DataParallelOptions> data_parallel_options(const DataParallelSettings& settings,
                                                  const c10::Device& home) {
  DataParallelOptions out;
  out.buckets.bucket_bytes = std::int64_t{settings.bucket_mb} << 20;
  out.buckets.first_bucket_bytes = std::min<std::int64_t>(out.buckets.bucket_bytes, 1 << 20);
  out.timeout =
      std::chrono::milliseconds(static_cast<std::int64_t>(settings.timeout_seconds * 1e3));
  out.shard = settings.shard;
  if (!home.is_cuda()) {
    out.devices = {home};
    return out;
  }
  const int visible = compat::cuda_device_count();
  const int wanted = settings.devices == 0 ? visible : settings.devices;
  if (wanted > visible) {
    return Status::invalid_argument("learner.data_parallel.devices: " + std::to_string(wanted) +
                                    " GPUs asked for, " + std::to_string(visible) +
                                    " visible (CUDA_VISIBLE_DEVICES, cluster gpus.learner)");
  }
  for (int d = 0; d < wanted; ++d) {
    out.devices.emplace_back(at::kCUDA, static_cast<c10::DeviceIndex>(d));
  }
  if (out.devices.empty() || out.devices.front() != home) {
    return Status::invalid_argument("learner.data_parallel: the model is on " + home.str() +
                                    ", not on the first visible GPU");
  }
  return out;
}

Result<std::unique_ptr<DataParallel>> DataParallel::create(Qwen3LM model,
                                                           const OptimizerOptions& optimizer,
                                                           bool optimizer_on_cpu,
                                                           const DataParallelOptions& options) {
  if (!model) return Status::invalid_argument("DataParallel: no model");
  std::unique_ptr<DataParallel> dp(new DataParallel());
  try {
    std::vector<at::Tensor> own = model->parameters();
    const c10::Device home = own.empty() ? c10::Device(at::kCPU) : own.front().device();
    std::vector<c10::Device> devices = options.devices;
    if (devices.empty()) devices.push_back(home);
    if (devices.front() != home) {
      return Status::invalid_argument("DataParallel: the first device (" + devices.front().str() +
                                      ") must be the model's own (" + home.str() + ")");
    }
    dp->replicas_.push_back(model);
    for (std::size_t r = 1; r < devices.size(); ++r) {
      Qwen3LM replica(model->config(),
                      at::TensorOptions().dtype(own.front().scalar_type()).device(devices[r]));
      std::vector<at::Tensor> theirs = replica->parameters();
      at::NoGradGuard no_grad;
      for (std::size_t i = 0; i < own.size(); ++i) theirs[i].copy_(own[i]);
      replica->train(model->is_training());
      replica->model->activation_checkpointing = model->model->activation_checkpointing;
      replica->model->attention_tile = model->model->attention_tile;
      dp->replicas_.push_back(replica);
    }
    // A sharded optimizer needs its collective on one device too (a one-rank group).
    const bool layers_sharded = options.shard == ShardMode::kParameters;
    const bool sharded = options.shard == ShardMode::kOptimizer || layers_sharded;
    if (layers_sharded && !model->model->activation_checkpointing) {
      return Status::invalid_argument(
          "learner.data_parallel.shard: parameters needs learner.activation_checkpointing: true "
          "(each layer's weights are gathered again to recompute it in the backward)");
    }
    if (devices.size() > 1 || sharded) {
      bool all_cuda = true;
      for (const c10::Device& d : devices) all_cuda = all_cuda && d.is_cuda();
      if (devices.size() > 1 && all_cuda && nccl::built_with_nccl()) {
        std::vector<int> indices;
        for (const c10::Device& d : devices) indices.push_back(d.index());
        DICE_ASSIGN_OR_RETURN(auto group,
                              NcclGradientCollective::create_group(indices, options.timeout));
        for (auto& c : group) {
          dp->collectives_.push_back(c.get());
          dp->nccl_.push_back(std::move(c));
        }
      } else {
        dp->in_process_ =
            std::make_unique<InProcessGroup>(static_cast<int>(devices.size()), options.timeout);
        for (int r = 0; r < dp->in_process_->world_size(); ++r) {
          dp->collectives_.push_back(dp->in_process_->rank(r));
        }
      }
    }
    if (sharded) {
      for (std::size_t r = 0; r < dp->replicas_.size(); ++r) {
        Qwen3LMImpl& replica = *dp->replicas_[r];
        std::vector<at::Tensor> params = replica.parameters();
        ParameterShards* layers = nullptr;
        if (layers_sharded) {
          for (at::Tensor& p : params) p.set_requires_grad(true);
          params = outside_layers(replica);
          // Past the reducer's buckets (at most one per parameter) and the norm's all-gather.
          dp->layers_.push_back(std::make_unique<ParameterShards>(
              *replica.model, dp->collectives_[r], params.size() + 1));
          layers = dp->layers_.back().get();
        }
        DICE_ASSIGN_OR_RETURN(
            auto shard,
            OptimizerShard::create(std::move(params), dp->collectives_[r], options.buckets,
                                   optimizer, optimizer_on_cpu, layers));
        dp->reducers_.push_back(&shard->reducer());
        dp->shards_.push_back(std::move(shard));
      }
      std::vector<const OptimizerShard*> all;
      for (const auto& shard : dp->shards_) all.push_back(shard.get());
      for (std::size_t r = 0; r < dp->replicas_.size(); ++r) {
        dp->masters_.push_back(
            std::make_unique<MasterWeights>(*dp->replicas_[r], dp->shards_[r].get(), all));
      }
      // The shards left every layer empty: GPU 0 holds them whole between steps.
      if (layers_sharded) DICE_RETURN_IF_ERROR(dp->gather_on_gpu0());
      return dp;
    }
    for (std::size_t r = 0; r < dp->replicas_.size(); ++r) {
      dp->masters_.push_back(
          std::make_unique<MasterWeights>(*dp->replicas_[r], optimizer, optimizer_on_cpu));
      if (devices.size() == 1) continue;
      DICE_ASSIGN_OR_RETURN(
          auto reducer, GradientReducer::create(dp->replicas_[r]->parameters(), dp->collectives_[r],
                                                options.buckets));
      dp->masters_.back()->set_reducer(reducer.get());
      dp->reducers_.push_back(reducer.get());
      dp->own_reducers_.push_back(std::move(reducer));
    }
  } catch (const c10::Error& e) {
    return Status::internal(std::string("DataParallel: ") + e.what_without_backtrace());
  }
  return dp;
}

DataParallel::~DataParallel() {
  // The optimizers point at the reducers' buffers: they go first.
  masters_.clear();
  reducers_.clear();
  shards_.clear();
  layers_.clear();  // after the optimizers that step their chunks
  own_reducers_.clear();
}

void DataParallel::arm(int rank) {
  if (!reducers_.empty()) reducers_[static_cast<std::size_t>(rank)]->arm();
}

std::size_t DataParallel::buckets_overlapped() const {
  return reducers_.empty() ? 0 : reducers_.front()->started_in_backward();
}

Status DataParallel::run(const std::function<Status(int rank)>& fn) {
  if (layers_.empty()) return on_ranks(fn);
  return on_ranks([&](int rank) { return sharded_step(rank, fn); });
}

Status DataParallel::sharded_step(int rank, const std::function<Status(int rank)>& fn) {
  ParameterShards& layers = *layers_[static_cast<std::size_t>(rank)];
  {
    layers.release_all();  // GPU 0's whole weights: the step holds one layer at a time
    HooksSet hooks(*replicas_[static_cast<std::size_t>(rank)]->model, &layers);
    Status done;
    try {  // a hook's failed collective throws; with one device fn runs on the caller's thread
      done = fn(rank);
    } catch (const std::exception& e) {
      done = Status::internal("data-parallel rank " + std::to_string(rank) + ": " + e.what());
    }
    DICE_RETURN_IF_ERROR(done);
  }
  DICE_RETURN_IF_ERROR(layers.gather_all());
  if (rank != 0) layers.release_all();
  return Status::ok_status();
}

Status DataParallel::gather_on_gpu0() {
  return on_ranks([&](int rank) -> Status {
    ParameterShards& layers = *layers_[static_cast<std::size_t>(rank)];
    DICE_RETURN_IF_ERROR(layers.gather_all());
    if (rank != 0) layers.release_all();
    return Status::ok_status();
  });
}

Status DataParallel::save_optimizer_state(const std::string& path) const {
  return masters_.front()->save(path);  // sharded: rank 0's writes every rank's file
}

Status DataParallel::load_optimizer_state(const std::string& path) {
  for (const auto& masters : masters_) DICE_RETURN_IF_ERROR(masters->load(path));
  // The loaded chunks are the weights now: GPU 0's whole layers are gathered from them.
  if (!layers_.empty()) DICE_RETURN_IF_ERROR(gather_on_gpu0());
  return Status::ok_status();
}

Status DataParallel::on_ranks(const std::function<Status(int rank)>& fn) {
  if (size() == 1) return fn(0);
  std::vector<Status> results(replicas_.size());
  auto one = [&](int r) {
    Status s;
    try {  // a thread must not let an exception through (std::terminate)
      s = fn(r);
    } catch (const std::exception& e) {
      s = Status::internal("data-parallel rank " + std::to_string(r) + ": " + e.what());
    }
    if (!s.ok()) collectives_[static_cast<std::size_t>(r)]->abort(s);
    results[static_cast<std::size_t>(r)] = s;
  };
  std::vector<std::thread> threads;
  for (int r = 1; r < size(); ++r) threads.emplace_back(one, r);
  one(0);
  for (std::thread& t : threads) t.join();
  for (const Status& s : results) DICE_RETURN_IF_ERROR(s);
  return Status::ok_status();
}

}  // namespace dice
