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

#include "common/status.h"
#include "model/qwen3.h"
#include "rollout/generation.h"

namespace dice {

class BlockDiffusionSampler;

struct GroupResult {
  std::vector<GenerationResult> results;  // in request order
  std::uint64_t policy_version = 0;
  std::uint64_t weights_checksum = 0;  // of the weights that sampled it (0: came by NCCL)
};

class RolloutEngine {
 public:
  // Builds the sampler (checks `options` against the model) and starts the thread.
  // `weights_checksum`: of the checkpoint `model` was loaded from (weights_checksum.h); the
  // engine reports it with every group, and a checkpoint update replaces it. `weights_dir`: that
  // checkpoint's folder, from which a failed load restores the model ("": none, a failed load
  // then ends the process).
  static Result<std::unique_ptr<RolloutEngine>> start(Qwen3LM model, SamplerOptions options,
                                                      std::uint64_t policy_version,
                                                      std::uint64_t weights_checksum = 0,
                                                      std::string weights_dir = "");
  ~RolloutEngine();  // stops the thread; waiting generate() calls get Aborted
  RolloutEngine(const RolloutEngine&) = delete;
  RolloutEngine& operator=(const RolloutEngine&) = delete;

  // Queues `requests` (their ids are ignored) and waits until all have finished, sampled by
  // `sampling` (none: the options the engine started with). Groups of equal sampling share the
  // batch; a group of other sampling waits until the batch has drained, then the sampler takes
  // its sampling. Errors: the sampler's (InvalidArgument for a bad request or sampling, Internal
  // for a LibTorch failure), Aborted after shutdown.
  Result<GroupResult> generate(std::vector<GenerationRequest> requests,
                               std::optional<SamplingOptions> sampling = std::nullopt);

  // Opens `checkpoint_dir` and checks it against the model now (check_weights(), and the
  // file's integrity on open); a checkpoint that does not fit is refused: the error names the
  // version, folder and tensor, and nothing changes. One that fits is loaded as policy `version`
  // once the running sequences have finished, or at once when `abort_in_flight` (the groups
  // running then start over on the new weights). A version not newer than the one held or
  // already pending is ignored, OK (the same push can come by broadcast and with a request).
  Status update_weights(std::string checkpoint_dir, std::uint64_t version,
                        bool abort_in_flight = false);
  // The same with any loader, run on the engine thread between sampler steps; `source` names it
  // in the log. The loader checks what it can before its first write and sets `copying` just
  // before that write: an error with `copying` false keeps the old version as it was; with it
  // true the engine restores the held version (see the header comment). `restore_dir`: a
  // checkpoint folder with the same weights, for restoring this version later ("": none).
  using WeightsLoader = std::function<Status(Qwen3LMImpl& model, bool& copying)>;
  void update_weights_with(WeightsLoader load, std::string source, std::uint64_t version,
                           bool abort_in_flight = false, std::string restore_dir = "");

  // The loads that failed on the engine thread since the last call, oldest first, each naming
  // the version, its source and why (the worker sends them to the learner).
  std::vector<Status> take_load_failures();

  std::uint64_t policy_version() const;
  // The sampling the engine started with: generate()'s default.
  const SamplingOptions& configured_sampling() const { return options_.sampling; }
  SamplerStats stats() const;
  std::int64_t sequences_aborted() const;  // dropped by aborting updates, since start

 private:
  struct Group {
    std::vector<GenerationRequest> requests;  // kept to start the group over after an abort
    SamplingOptions sampling;
    std::vector<GenerationResult> results;
    std::size_t remaining = 0;
    Status status;
    std::uint64_t policy_version = 0;
    std::uint64_t weights_checksum = 0;
    bool done = false;
  };
  struct PendingUpdate {
    WeightsLoader load;
    std::string source;
    std::uint64_t version;
    bool abort_in_flight;
    std::shared_ptr<const std::uint64_t> checksum;  // set by a checkpoint load; null: unknown
    std::string restore_dir;                        // the same weights as a folder ("": none)
  };

  RolloutEngine(Qwen3LM model, SamplerOptions options, std::uint64_t version);
  void run();
  void fail_running(const Status& status);  // caller holds mutex_
  void restart_running();                   // caller holds mutex_; engine thread only
  // Makes an update pending (caller holds mutex_); an older version than one held or pending is
  // ignored.
  void queue_update(PendingUpdate update);
  // Whether `version` would be ignored (not newer than the one held or pending); holds mutex_.
  bool stale(std::uint64_t version) const;
  void admit_queued();  // caller holds mutex_; engine thread only
  void fail_group(const std::shared_ptr<Group>& group, const Status& status);  // holds mutex_
  // Engine thread only; `lock` holds mutex_ and is released while the loader runs.
  void load_pending_update(std::unique_lock<std::mutex>& lock);
  // After a load failed mid-copy: reloads the held version from held_dir_, checksum verified.
  // Engine thread, with mutex_ released (only the engine thread changes the held state).
  Status restore_held_version();
  void deliver_finished(std::vector<GenerationResult>& finished);  // caller holds mutex_

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
  std::uint64_t weights_checksum_ = 0;
  std::string held_dir_;  // a checkpoint folder holding version_'s weights ("": none)
  std::vector<Status> load_failures_;
  SamplerStats stats_;
  std::int64_t sequences_aborted_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace dice
