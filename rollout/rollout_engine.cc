#include "rollout/rollout_engine.h"

#include <algorithm>
#include <cstdlib>
#include <exception>

#include <torch/csrc/autograd/grad_mode.h>

#include "common/log.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/weights_checksum.h"
#include "model/weights.h"
#include "rollout/sampler.h"

namespace dice {

Result<std::unique_ptr<RolloutEngine>> RolloutEngine::start(Qwen3LM model, SamplerOptions options,
                                                            std::uint64_t policy_version,
                                                            std::uint64_t weights_checksum,
                                                            std::string weights_dir) {
  std::unique_ptr<RolloutEngine> engine(new RolloutEngine(model, options, policy_version));
  engine->weights_checksum_ = weights_checksum;
  engine->held_dir_ = std::move(weights_dir);
  DICE_ASSIGN_OR_RETURN(engine->sampler_, BlockDiffusionSampler::create(model, options));
  engine->thread_ = std::thread([e = engine.get()] { e->run(); });
  return engine;
}

RolloutEngine::RolloutEngine(Qwen3LM model, SamplerOptions options, std::uint64_t version)
    : model_(std::move(model)), options_(std::move(options)), version_(version) {}

RolloutEngine::~RolloutEngine() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    work_ready_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  fail_running(Status::aborted("the rollout engine stopped"));
  for (auto& [group, requests] : queued_) {
    group->status = Status::aborted("the rollout engine stopped");
    group->done = true;
  }
  queued_.clear();
  group_done_.notify_all();
}

Result<GroupResult> RolloutEngine::generate(std::vector<GenerationRequest> requests,
                                            std::optional<SamplingOptions> sampling) {
  if (requests.empty()) return GroupResult{{}, policy_version()};
  auto group = std::make_shared<Group>();
  group->requests = requests;
  group->sampling = sampling ? *sampling : options_.sampling;
  group->results.resize(requests.size());
  group->remaining = requests.size();
  std::unique_lock<std::mutex> lock(mutex_);
  if (stopping_) return Status::aborted("the rollout engine stopped");
  queued_.emplace_back(group, std::move(requests));
  work_ready_.notify_all();
  group_done_.wait(lock, [&] { return group->done; });
  if (!group->status.ok()) return group->status;
  return GroupResult{std::move(group->results), group->policy_version, group->weights_checksum};
}

Status RolloutEngine::update_weights(std::string checkpoint_dir, std::uint64_t version,
                                     bool abort_in_flight) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stale(version)) return Status::ok_status();
  }
  // Checked here, on the caller's thread, so the caller can answer the learner at once. Parameter
  // shapes and dtypes never change, so reading them while the engine samples is safe.
  const std::string what = "weights v" + std::to_string(version);
  Result<Checkpoint> opened = Checkpoint::open(checkpoint_dir);
  if (!opened.ok()) return opened.status().with_context(what);
  auto checkpoint = std::make_shared<const Checkpoint>(std::move(opened).value());
  DICE_RETURN_IF_ERROR(check_weights(*checkpoint, *model_).with_context(what));
  auto checksum = std::make_shared<std::uint64_t>(0);
  // The checkpoint checked above is the one loaded: its maps stay valid while the loader lives.
  WeightsLoader load = [checkpoint, checksum](Qwen3LMImpl& model, bool& copying) -> Status {
    DICE_RETURN_IF_ERROR(load_weights(*checkpoint, model, &copying));
    *checksum = weights_checksum(*checkpoint);
    return Status::ok_status();
  };
  std::lock_guard<std::mutex> lock(mutex_);
  queue_update(PendingUpdate{std::move(load), checkpoint_dir, version, abort_in_flight,
                             std::move(checksum), checkpoint_dir});
  return Status::ok_status();
}

bool RolloutEngine::stale(std::uint64_t version) const {
  return version <= version_ || (update_ && version <= update_->version);
}

void RolloutEngine::queue_update(PendingUpdate update) {
  if (stale(update.version)) return;
  update_ = std::move(update);
  work_ready_.notify_all();
}

void RolloutEngine::update_weights_with(WeightsLoader load, std::string source,
                                        std::uint64_t version, bool abort_in_flight,
                                        std::string restore_dir) {
  std::lock_guard<std::mutex> lock(mutex_);
  queue_update(PendingUpdate{std::move(load), std::move(source), version, abort_in_flight, nullptr,
                             std::move(restore_dir)});
}

std::vector<Status> RolloutEngine::take_load_failures() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Status> out;
  out.swap(load_failures_);
  return out;
}

std::uint64_t RolloutEngine::policy_version() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return version_;
}

SamplerStats RolloutEngine::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::int64_t RolloutEngine::sequences_aborted() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sequences_aborted_;
}

void RolloutEngine::restart_running() {
  std::vector<uint64_t> dropped = sampler_->cancel_all();
  (void)sampler_->take_finished();  // members of groups that start over anyway
  sequences_aborted_ += static_cast<std::int64_t>(dropped.size());
  std::vector<std::shared_ptr<Group>> groups;
  for (auto& [id, entry] : running_) {
    if (std::find(groups.begin(), groups.end(), entry.first) == groups.end()) {
      groups.push_back(entry.first);
    }
  }
  running_.clear();
  // Front of the queue, in their original order: they were admitted before anything queued now.
  for (auto it = groups.rbegin(); it != groups.rend(); ++it) {
    Group& group = **it;
    group.results.assign(group.requests.size(), GenerationResult());
    group.remaining = group.requests.size();
    queued_.emplace_front(*it, group.requests);
  }
  DICE_LOG(Info) << "weights update aborts the sequences in flight; their groups start over"
                 << kv("sequences", dropped.size()) << kv("groups", groups.size());
}

void RolloutEngine::fail_group(const std::shared_ptr<Group>& group, const Status& status) {
  for (auto it = running_.begin(); it != running_.end();) {
    it = it->second.first == group ? running_.erase(it) : std::next(it);
  }
  group->status = status;
  group->done = true;
  group_done_.notify_all();
}

void RolloutEngine::admit_queued() {
  while (!queued_.empty()) {
    const std::shared_ptr<Group>& next = queued_.front().first;
    if (!same_sampling(next->sampling, sampler_->options().sampling)) {
      // Another sampling: once the batch has drained (the sampler is then idle), it takes it.
      if (!running_.empty() || !sampler_->idle()) return;
      Status switched = sampler_->set_sampling(next->sampling);
      if (!switched.ok()) {  // a bad sampling fails its own group only
        auto group = queued_.front().first;
        queued_.pop_front();
        fail_group(group, switched);
        continue;
      }
    }
    auto [group, requests] = std::move(queued_.front());
    queued_.pop_front();
    group->policy_version = version_;
    group->weights_checksum = weights_checksum_;
    for (std::size_t i = 0; i < requests.size(); ++i) {
      requests[i].id = next_id_++;
      Status added = sampler_->add_request(requests[i]);
      if (!added.ok()) {  // a bad request fails its own group only
        fail_group(group, added);
        break;
      }
      running_[requests[i].id] = {group, i};
    }
  }
}

void RolloutEngine::fail_running(const Status& status) {
  for (auto& [id, entry] : running_) {
    entry.first->status = status;
    entry.first->done = true;
  }
  running_.clear();
  group_done_.notify_all();
}

Status RolloutEngine::restore_held_version() {
  const std::string what = "restoring policy version " + std::to_string(version_);
  if (held_dir_.empty()) {
    return Status::unavailable(what + ": no checkpoint folder holds it");
  }
  Result<Checkpoint> opened = Checkpoint::open(held_dir_);
  if (!opened.ok()) return opened.status().with_context(what);
  const Checkpoint& checkpoint = opened.value();
  const std::uint64_t checksum = weights_checksum(checkpoint);
  // 0: the version came by NCCL, whose bytes were never summed; its folder is taken as is.
  if (weights_checksum_ != 0 && checksum != weights_checksum_) {
    return Status::corruption(what + ": " + held_dir_ + " has checksum " + checksum_hex(checksum) +
                              ", the weights held had " + checksum_hex(weights_checksum_));
  }
  DICE_RETURN_IF_ERROR(load_weights(checkpoint, *model_).with_context(what + " from " + held_dir_));
  weights_checksum_ = checksum;
  return Status::ok_status();
}

// Runs the pending update's loader. A load refused before its first write keeps the old version
// untouched; one that failed while writing restores it, or ends the process.
void RolloutEngine::load_pending_update(std::unique_lock<std::mutex>& lock) {
  PendingUpdate update = std::move(*update_);
  update_.reset();
  lock.unlock();
  bool copying = false;
  Status loaded;
  try {
    loaded = update.load(*model_, copying);
  } catch (const std::exception& e) {  // LibTorch reports device failures by throwing
    loaded = Status::internal(e.what());
  }
  Status restored;
  if (!loaded.ok() && copying) restored = restore_held_version();
  lock.lock();
  if (loaded.ok()) {
    version_ = update.version;
    weights_checksum_ = update.checksum ? *update.checksum : 0;
    held_dir_ = update.restore_dir;
    DICE_LOG(Info) << "weights updated" << kv("policy_version", version_)
                   << kv("from", update.source) << kv("checksum", checksum_hex(weights_checksum_));
    return;
  }
  if (!restored.ok()) {
    // The model mixes two versions and nothing can undo it: no candidate may come from it. The
    // supervisor starts the worker again, which loads its configured weights and catches up.
    DICE_LOG(Error) << "weights update failed while writing the model and the held version "
                       "cannot be restored; exiting"
                    << kv("policy_version", version_) << kv("update", update.version)
                    << kv("error", loaded.to_string()) << kv("restore", restored.to_string());
    std::_Exit(1);
  }
  load_failures_.push_back(
      Status(loaded.code(), "weights v" + std::to_string(update.version) + " from " +
                                update.source + " not loaded (" + loaded.message() +
                                "); staying on policy version " + std::to_string(version_) +
                                (copying ? ", restored from " + held_dir_ : "")));
  DICE_LOG(Error) << "weights update failed; keeping the old weights"
                  << kv("policy_version", version_) << kv("update", update.version)
                  << kv("restored", copying ? held_dir_ : std::string("(untouched)"))
                  << kv("error", loaded.to_string());
}

// Each finished sequence's result into its group; a group whose last one arrived is done.
void RolloutEngine::deliver_finished(std::vector<GenerationResult>& finished) {
  for (GenerationResult& result : finished) {
    auto it = running_.find(result.id);
    if (it == running_.end()) continue;  // its group already failed
    auto [group, index] = it->second;
    running_.erase(it);
    group->results[index] = std::move(result);
    if (--group->remaining == 0) {
      group->done = true;
      group_done_.notify_all();
    }
  }
}

void RolloutEngine::run() {
  torch::NoGradGuard no_grad;
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    // New weights once nothing runs on the old ones; nothing new is admitted meanwhile.
    if (update_ && update_->abort_in_flight && !running_.empty()) restart_running();
    if (update_ && running_.empty()) {
      load_pending_update(lock);
      continue;
    }
    if (!update_) admit_queued();
    if (running_.empty()) {
      work_ready_.wait(lock, [&] { return stopping_ || !queued_.empty() || update_.has_value(); });
      continue;
    }
    lock.unlock();
    Status stepped = sampler_->step();
    std::vector<GenerationResult> finished = sampler_->take_finished();
    lock.lock();
    stats_ = sampler_->stats();
    if (!stepped.ok()) {
      DICE_LOG(Error) << "sampler failed; dropping its batch" << kv("error", stepped.to_string());
      fail_running(stepped);
      auto fresh = BlockDiffusionSampler::create(model_, options_);
      if (!fresh.ok()) {
        DICE_LOG(Error) << "cannot rebuild the sampler" << kv("error", fresh.status().to_string());
        stopping_ = true;
        break;
      }
      sampler_ = std::move(fresh).value();
      continue;
    }
    deliver_finished(finished);
  }
  // Stopped (or the sampler could not be rebuilt): nobody may wait forever.
  fail_running(Status::aborted("the rollout engine stopped"));
  for (auto& queued : queued_) {
    queued.first->status = Status::aborted("the rollout engine stopped");
    queued.first->done = true;
  }
  queued_.clear();
  group_done_.notify_all();
}

}  // namespace dice
