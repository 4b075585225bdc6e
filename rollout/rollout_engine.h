// RolloutEngine: the one thread that drives a BlockDiffusionSampler for a rollout worker.
// Handler threads (one per work item in hand) submit a group of generation requests and wait for
// the group's results; the engine thread keeps the sampler stepping while anything runs, so the
// groups of several work items share one continuous batch.
//
// Weights: update_weights() names a checkpoint folder and its policy version (update_weights_with()
// instead hands over a loader, e.g. weights already received by NCCL into staging tensors). The
// engine stops admitting new requests, lets the running ones finish on the old weights (or, when
// the update says abort, drops them and queues their groups again, whole, to run on the new
// weights), loads the new ones in place, then admits again; so every group is produced by exactly
// one policy version, which generate() reports.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/model/qwen3.h"
#include "common/status.h"
#include "rollout/generation.h"

namespace dice {

class BlockDiffusionSampler;

struct GroupResult {
  std::vector<GenerationResult> results;  // in request order
  std::uint64_t policy_version = 0;
};

class RolloutEngine {
 public:
  // Builds the sampler (checks `options` against the model) and starts the thread.
  static Result<std::unique_ptr<RolloutEngine>> start(Qwen3LM model, SamplerOptions options,
                                                      std::uint64_t policy_version);
  ~RolloutEngine();  // stops the thread; waiting generate() calls get Aborted
  RolloutEngine(const RolloutEngine&) = delete;
  RolloutEngine& operator=(const RolloutEngine&) = delete;

  // Queues `requests` (their ids are ignored) and waits until all have finished. Errors: the
  // sampler's (InvalidArgument for a bad request, Internal for a LibTorch failure), Aborted after
  // shutdown.
  Result<GroupResult> generate(std::vector<GenerationRequest> requests);

  // Loads `checkpoint_dir` as policy `version` once the running sequences have finished, or at
  // once when `abort_in_flight` (the groups running then start over on the new weights). A load
  // failure is logged and the old weights stay. A version not newer than the one held or already
  // pending is ignored (the same push can come by broadcast and with a request).
  void update_weights(std::string checkpoint_dir, std::uint64_t version,
                      bool abort_in_flight = false);
  // The same with any loader, run on the engine thread between sampler steps; `source` names it
  // in the log. A loader error keeps the old version (the model may be partly overwritten then,
  // as with a failed checkpoint load).
  using WeightsLoader = std::function<Status(Qwen3LMImpl& model)>;
  void update_weights_with(WeightsLoader load, std::string source, std::uint64_t version,
                           bool abort_in_flight = false);

  std::uint64_t policy_version() const;
  SamplerStats stats() const;
  std::int64_t sequences_aborted() const;  // dropped by aborting updates, since start

 private:
  struct Group {
    std::vector<GenerationRequest> requests;  // kept to start the group over after an abort
    std::vector<GenerationResult> results;
    std::size_t remaining = 0;
    Status status;
    std::uint64_t policy_version = 0;
    bool done = false;
  };
  struct PendingUpdate {
    WeightsLoader load;
    std::string source;
    std::uint64_t version;
    bool abort_in_flight;
  };

  RolloutEngine(Qwen3LM model, SamplerOptions options, std::uint64_t version);
  void run();
  void fail_running(const Status& status);  // caller holds mutex_
  void restart_running();                   // caller holds mutex_; engine thread only

  Qwen3LM model_;
  SamplerOptions options_;
  std::unique_ptr<BlockDiffusionSampler> sampler_;  // engine thread only (after start)

  mutable std::mutex mutex_;
  std::condition_variable work_ready_;  // the engine waits for requests or an update
  std::condition_variable group_done_;  // generate() waits for its group
  std::deque<std::pair<std::shared_ptr<Group>, std::vector<GenerationRequest>>> queued_;
  std::map<std::uint64_t, std::pair<std::shared_ptr<Group>, std::size_t>> running_;  // by id
  std::optional<PendingUpdate> update_;
  std::uint64_t next_id_ = 1;
  std::uint64_t version_ = 0;
  SamplerStats stats_;
  std::int64_t sequences_aborted_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dice
