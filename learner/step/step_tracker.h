// StepTracker: the state of one RL step, without sockets or threads (the run loop feeds it the
// dispatcher's results and the clock, and submits what it queues), so tests drive it directly.
//
//   start(tasks)   -> one RolloutRequest per task (group = a fresh id), role ROLLOUT
//   Candidate      -> one EvalRequest (fresh work id, the task attached), role REWARD;
//                     dropped instead when its policy version is older than current -
//                     max_staleness, or it repeats a sample already seen
//   Verdict        -> kept with its candidate's response text
//   Error          -> a rollout error ends its group's hope of more candidates; an evaluation
//                     error loses that one sample
//   service fault  -> a verdict whose failure is the reward service's own (internalError,
//                     sandboxUnavailable; the worker has retried it once on another slot) is
//                     counted (internal_errors) and, by default, scored as the candidate's
//                     failure: reward 0 in its group, so no fault is a free pass. With
//                     learner.internal_errors unscored it is kept for the reward log but stays
//                     out of its group's z-scores and of the update (an evaluation error)
//   group done     -> every sample judged or lost: rewards z-scored (advantage.h), its texts
//                     and rewards counted for the exploration readouts (group_variety) -> finished
//   expire()       -> a group older than the timeout is skipped: its verdicts so far are kept
//                     with advantage 0, so the run never hangs on a lost worker
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "learner/curriculum/task_loader.h"
#include "learner/step/advantage.h"
#include "learner/step/trace_layout.h"
#include "net/transport/dispatcher_state.h"
#include "options/learner_options.h"
#include "options/reward_options.h"
#include "rewardlog/step_exploration.h"
#include "schemas/rollout.capnp.h"

namespace dice {

// What every request of a step carries.
struct StepSettings {
  std::string run_id = "-";
  std::string learner_id = "learner";  // senderId of the envelopes
  std::uint64_t step = 0;              // global step number (across phases)
  std::uint32_t samples_per_task = 2;
  std::uint64_t policy_version = 0;  // weights the learner holds now
  std::string weights_dir;           // their checkpoint folder; empty: the initial policy
  std::uint64_t max_staleness = 1;   // candidates older than policy_version - this are dropped
  bool drop_constant_groups = true;
  // What a service-fault verdict counts for (learner.internal_errors).
  InternalErrorScoring internal_errors = InternalErrorScoring::kFailure;
  std::function<void(schema::SamplingParams::Builder)> fill_sampling;  // may be empty
  // The temperature fill_sampling asks for: every trace carries it (TraceSample::temperature),
  // so that the update scores the samples at the softmax they were drawn from.
  double temperature = 1.0;
  // For the StepRecord: the phase's name, whether it evaluates only, and the reward mode.
  std::string phase_name;
  bool evaluation = false;
  std::string reward_mode = "full";
  std::uint32_t rollout_ahead = 0;  // learner.async.max_ahead the step runs under
  bool want_timing = true;          // Task.wantTiming of the evaluation requests
  // Task.rewardPolicy of the evaluation requests (a phase's reward_policy); null: unset, the
  // reward service's reward.policy
  std::optional<RewardPolicyOptions> reward_policy;
};

// Counts of one step, for the StepRecord, metrics and the progress line.
struct StepCounts {
  std::uint32_t tasks = 0;
  std::uint32_t candidates = 0;     // candidates received and sent for evaluation
  std::uint32_t truncated = 0;      // of those, cut by maxNewTokens (Candidate.finishReason)
  double generation_seconds = 0.0;  // their groups' sampling time (Candidate.generationSeconds)
  std::uint32_t stale_dropped = 0;  // candidates dropped for staleness
  std::uint32_t duplicate_candidates = 0;
  std::uint32_t verdicts = 0;  // scored verdicts (service faults too, unless left unscored)
  std::uint32_t compiled = 0;
  std::uint32_t correct = 0;
  double reward_sum = 0.0;
  std::uint32_t groups_complete = 0;  // every sample judged or lost
  std::uint32_t groups_dropped = 0;   // complete, but all rewards equal (no signal)
  std::uint32_t groups_skipped = 0;   // timed out or failed, or cut short by a drain
  std::uint32_t rollout_errors = 0;
  std::uint32_t eval_errors = 0;  // samples lost, or judged with a service fault left unscored
  // Verdicts the reward service could not reach (is_service_fault), scored or not; of those,
  // `unscored_internal_errors` were left out of scoring (learner.internal_errors unscored).
  std::uint32_t internal_errors = 0;
  std::uint32_t unscored_internal_errors = 0;
  std::uint32_t unexpected_results = 0;  // results for work this step does not know
  // How stale the step's candidates were when its update began: its policy version then minus
  // each candidate's (count_staleness(); 0 in the synchronous loop). The tracker leaves them 0.
  double staleness_mean = 0.0;
  std::uint32_t staleness_max = 0;
  // How much the rollouts explored: each complete group with a scored sample, its different
  // response texts and whether its rewards were mixed (group_variety()), dropped ones included.
  rewardlog::ExplorationCounts exploration;
};

// One scored sample of a group, as group_variety() compares it.
struct JudgedAnswer {
  std::string_view text;  // the response text (Candidate.text), what the reward service judged
  double reward = 0.0;
};

// How varied one group's answers were: its different texts (byte equality of the text, not of
// token ids: two token sequences that decode to the same text are one answer to the reward) and
// whether its rewards were mixed (not all equal, the same test as group_advantages()'s constant).
struct GroupVariety {
  std::uint32_t samples = 0;
  std::uint32_t distinct_texts = 0;
  bool mixed = false;
};
GroupVariety group_variety(const std::vector<JudgedAnswer>& answers);

struct FinishedSample {
  std::uint32_t sample_index = 0;
  std::string response_text;
  wire::Decoded<schema::Envelope> verdict;  // body.verdict
  double advantage = 0.0;
  TraceSample trace;  // the candidate's tokens and trace; trace.advantage == advantage
  std::uint64_t weights_checksum = 0;  // of the weights that sampled it (Candidate's)
  std::string rollout_worker;          // who sampled it (Candidate.rolloutWorker)
  // false: a service fault left unscored (learner.internal_errors); logged with advantage 0,
  // never trained on
  bool scored = true;
  // per response token: where its text ends in response_text (Candidate.tokenTextEnds), for the
  // reward log's view of the trace; empty when the worker sent none
  std::vector<std::uint32_t> token_text_ends;
};

// Whether a verdict's failure is the reward service's own rather than the candidate's: the
// judge could not reach a verdict (internalError, sandboxUnavailable), even on its retry.
bool is_service_fault(schema::Verdict::Reader verdict);

// The reward a scored verdict counts for in its group: 0 for a service fault (the candidate's
// failure, whatever reward the verdict carries), else the verdict's reward.
double scored_reward(schema::Verdict::Reader verdict);

// The share of a step's verdicts (scored or not) that were service faults; NaN without verdicts.
double internal_error_share(const StepCounts& counts);

struct FinishedGroup {
  std::uint64_t group = 0;
  const LearnerTask* task = nullptr;
  std::vector<FinishedSample> samples;  // the judged ones, by sample index
  bool complete = false;                // false: skipped (see skip_reason); advantages are then 0
  bool dropped = false;                 // complete but constant, and drop_constant_groups
  std::string skip_reason;
};

class StepTracker {
 public:
  // Work ids and group ids come from the counters behind the pointers (unique across the run).
  StepTracker(StepSettings settings, std::uint64_t* next_work_id, std::uint64_t* next_group_id);

  void start(const std::vector<const LearnerTask*>& tasks, transport::TimePoint now);
  void handle(transport::WorkResult result);
  // Skips every open group started before now - timeout.
  void expire(transport::TimePoint now, std::chrono::milliseconds timeout);
  // Skips every open group (the drain ran out of time).
  void abandon_all(const std::string& why);

  std::vector<transport::WorkItem> take_outbox();
  std::vector<FinishedGroup> take_finished();
  // The work ids of skipped groups whose answers nobody waits for any more (their rollout request
  // and the evaluations still without a verdict), for WorkDispatcher::cancel to withdraw those
  // still queued and stop those a worker holds, so reward slots do not judge them. Empty after
  // each call.
  std::vector<std::uint64_t> take_unwanted();
  bool done() const { return open_groups_ == 0; }
  std::size_t open_groups() const { return open_groups_; }
  const StepCounts& counts() const { return counts_; }
  const StepSettings& settings() const { return settings_; }
  // Whether `work_id` is one of this step's rollout or evaluation requests (several steps are in
  // flight at once in the asynchronous mode, and each result goes to the step that asked).
  bool owns(std::uint64_t work_id) const;
  // The policy versions of the candidates sent for evaluation: version -> how many.
  const std::map<std::uint64_t, std::uint32_t>& candidate_versions() const {
    return candidate_versions_;
  }

 private:
  struct Sample {
    std::string response_text;
    std::vector<std::uint32_t> token_text_ends;  // Candidate.tokenTextEnds
    TraceSample trace;
    std::uint64_t weights_checksum = 0;
    std::string rollout_worker;
    std::uint64_t eval_work_id = 0;
    std::optional<wire::Decoded<schema::Envelope>> verdict;
    bool lost = false;   // will never get a verdict
    bool scored = true;  // false: a service fault left unscored (learner.internal_errors)
  };
  struct Group {
    const LearnerTask* task = nullptr;
    std::uint64_t rollout_work_id = 0;
    std::map<std::uint32_t, Sample> samples;  // by sample index, as candidates arrive
    bool rollout_failed = false;
    bool finished = false;
    transport::TimePoint started;
  };
  struct EvalRef {
    std::uint64_t group;
    std::uint32_t sample;
  };

  void on_candidate(std::uint64_t work_id, schema::Candidate::Reader candidate);
  void on_verdict(std::uint64_t work_id, wire::Decoded<schema::Envelope> envelope);
  void on_error(std::uint64_t work_id, schema::Error::Reader error);
  void check_complete(std::uint64_t group_id);
  void finish(std::uint64_t group_id, bool complete, const std::string& skip_reason);

  StepSettings settings_;
  std::uint64_t* next_work_id_;
  std::uint64_t* next_group_id_;
  std::map<std::uint64_t, Group> groups_;                      // by group id
  std::unordered_map<std::uint64_t, std::uint64_t> rollouts_;  // rollout work id -> group
  std::unordered_map<std::uint64_t, EvalRef> evals_;           // eval work id -> sample
  std::size_t open_groups_ = 0;
  std::vector<transport::WorkItem> outbox_;
  std::vector<FinishedGroup> finished_;
  StepCounts counts_;
  std::vector<std::uint64_t> unwanted_;  // take_unwanted()
  std::map<std::uint64_t, std::uint32_t> candidate_versions_;
};

// Fills counts->staleness_mean and staleness_max from `versions` (candidate_versions()) against
// `trained_version`, the policy version the step's update starts from (a candidate newer than it
// counts 0).
void count_staleness(const std::map<std::uint64_t, std::uint32_t>& versions,
                     std::uint64_t trained_version, StepCounts* counts);

}  // namespace dice
