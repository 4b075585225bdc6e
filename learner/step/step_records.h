// What one step leaves in the reward log (docs/REWARD_LOG.md): a CandidateRecord per judged
// sample (with its advantage), a KernelRecord per source hash not seen before in this process, a
// StepRecord and MetricRecords. These functions only build records; the run loop writes them.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "learner/step/policy_update.h"
#include "learner/step/step_tracker.h"
#include "rewardlog/record_codec.h"
#include "rewardlog/step_exploration.h"

namespace dice {

// What this process has already written once: kernels are keyed by source hash alone, tasks by
// run and task id. A restarted learner starts empty and writes them again, which overwrites a
// record with the same content (a task's first step becomes the resumed step).
struct LoggedOnce {
  std::unordered_set<std::string> kernel_hashes;
  std::unordered_set<std::string> task_ids;  // of the run being written
};

// Records of a finished group: one CandidateRecord per sample (with its denoising trace), a
// KernelRecord for each source hash of its verdicts not yet in `logged`, and the group's task as
// a TaskRecord if `logged` has not seen it (so the reference is stored once per run and task, in
// the same append as the first candidates of it); `logged` is updated. Identity fields of the
// verdict (run, step, task, group, sample) are set from the learner's books, so a worker that got
// them wrong cannot file a record under another candidate's key.
Result<std::vector<rewardlog::LogRecord>> group_records(const FinishedGroup& group,
                                                        const StepSettings& settings,
                                                        LoggedOnce* logged, std::int64_t now_ms);

// The TaskRecord of `task` as the run met it at `settings.step`.
Result<rewardlog::LogRecord> task_record(const LearnerTask& task, const StepSettings& settings,
                                         std::int64_t now_ms);

struct StepTiming {
  std::int64_t started_ms = 0;
  std::int64_t finished_ms = 0;
};

// The StepRecord. policyVersion is the version that sampled the step. Without an update that
// ran (`update.ran` false), loss, klDivergence, gradNorm and clipFraction are NaN ("not
// computed"), never a made-up number. The exploration counts come from counts.exploration, the
// internal errors and their share from counts.internal_errors (internal_error_share()).
Result<rewardlog::LogRecord> step_record(const StepCounts& counts, const StepSettings& settings,
                                         TaskKind kind, StepTiming timing,
                                         const PolicyUpdate& update = {});

// Per-step metric series: reward/mean, reward/correct_rate, reward/compile_rate,
// rollout/candidates_per_s, rollout/truncated_rate, rollout/generation_seconds_mean,
// learner/groups_dropped, learner/groups_skipped,
// learner/candidates_stale, learner/staleness_mean, learner/staleness_max,
// learner/worker_errors, reward/internal_errors; when a verdict came: reward/internal_error_share
// (rewardlog/step_internal_errors.h); when a group was judged: rollout/mixed_group_share,
// rollout/distinct_texts_mean, rollout/distinct_text_share (rewardlog/step_exploration.h); and
// when the update ran: learner/loss, learner/kl, learner/grad_norm,
// learner/clip_fraction, learner/ratio_mean, learner/optimizer_steps, learner/update_seconds,
// learner/importance_mean, learner/padding_fraction, learner/policy_version.
Result<std::vector<rewardlog::LogRecord>> metric_records(const StepCounts& counts,
                                                         const StepSettings& settings,
                                                         StepTiming timing,
                                                         const PolicyUpdate& update = {});

// One point of a metric series.
Result<rewardlog::LogRecord> metric_record(const std::string& run_id, const std::string& name,
                                           std::uint64_t step, double value,
                                           std::int64_t unix_millis);

// Mean reward over the step's verdicts (0 when none).
double mean_reward(const StepCounts& counts);

}  // namespace dice
