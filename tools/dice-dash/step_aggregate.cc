#include "tools/dice-dash/step_aggregate.h"

#include "net/wire/enum_name.h"

namespace dice::dash {

Result<TaskLevels> task_levels(rewardlog::RewardLogReader& reader, const std::string& run_id) {
  DICE_ASSIGN_OR_RETURN(auto tasks, reader.tasks(run_id));
  TaskLevels levels;
  for (const auto& task : tasks) {
    const std::string level = task.get().getLevel().cStr();
    levels[task.get().getTaskId().cStr()] = level.empty() ? "none" : level;
  }
  return levels;
}

StepAggregate aggregate_step(rewardlog::RewardLogReader& reader, const std::string& run_id,
                             uint64_t step, uint64_t policy_version, const TaskLevels& levels) {
  StepAggregate out;
  out.step = step;
  uint64_t staleness_sum = 0;
  rewardlog::CandidateFilter filter;
  filter.step = step;
  const Status scanned = reader.for_each_candidate(
      run_id, filter, [&](rewardlog::OwnedRecord<schema::CandidateRecord> record) {
        const auto verdict = record.get().getVerdict();
        ++out.candidates;
        ++out.failures[wire::enum_name(verdict.getFailure())];
        // A candidate counts once per check, however many lines the check flagged.
        std::map<std::string, bool> checks;
        for (auto finding : verdict.getFindings()) checks[finding.getCheck().cStr()] = true;
        for (const auto& entry : checks) ++out.findings[entry.first];
        if (verdict.getCorrect() && verdict.getSpeedup() > 0) {
          out.speedups.push_back(verdict.getSpeedup());
        }
        const auto timings = verdict.getTimings();
        out.reward_seconds += timings.getCompileSeconds() + timings.getEvalSeconds();
        const uint64_t sampled = verdict.getPolicyVersion();
        const uint64_t staleness = policy_version > sampled ? policy_version - sampled : 0;
        staleness_sum += staleness;
        if (staleness > out.max_staleness) out.max_staleness = staleness;
        const auto level = levels.find(verdict.getTaskId().cStr());
        if (level != levels.end()) {
          LevelTally& tally = out.levels[level->second];
          ++tally.candidates;
          tally.correct += verdict.getCorrect() ? 1 : 0;
          tally.reward_sum += verdict.getReward();
        }
        return Status::ok_status();
      });
  if (!scanned.ok()) out.error = scanned.to_string();
  if (out.candidates > 0) out.mean_staleness = double(staleness_sum) / out.candidates;
  return out;
}

const StepAggregate& StepAggregateCache::get(size_t log_index, rewardlog::RewardLogReader& reader,
                                             const std::string& run_id, uint64_t step,
                                             uint64_t policy_version, const TaskLevels& levels) {
  auto& steps = runs_[std::to_string(log_index) + "/" + run_id];
  const auto found = steps.find(step);
  if (found != steps.end()) return found->second;
  StepAggregate aggregate = aggregate_step(reader, run_id, step, policy_version, levels);
  if (!aggregate.error.empty()) {
    uncached_ = std::move(aggregate);
    return uncached_;
  }
  return steps.emplace(step, std::move(aggregate)).first->second;
}

}  // namespace dice::dash
