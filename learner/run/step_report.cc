#include "learner/run/step_report.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "common/fixed_text.h"
#include "common/log.h"
#include "learner/run/eval_summary.h"
#include "net/wire/envelope.h"
#include "rewardlog/step_internal_errors.h"

namespace dice {
namespace {

// Metric records of the step, named `prefix` + name.
Result<std::vector<rewardlog::LogRecord>> metric_values(
    const StepSettings& settings, const std::string& prefix,
    const std::vector<std::pair<std::string, double>>& values) {
  const std::int64_t now = wire::unix_millis_now();
  std::vector<rewardlog::LogRecord> records;
  for (const auto& [name, value] : values) {
    DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord r,
                          metric_record(settings.run_id, prefix + name, settings.step, value, now));
    records.push_back(std::move(r));
  }
  return records;
}

}  // namespace

Status append_step_records(rewardlog::RewardLogWriter& log, const StepCounts& c,
                           const StepSettings& settings, TaskKind kind, const StepTiming& timing,
                           const PolicyUpdate& update, std::vector<rewardlog::LogRecord> more) {
  DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord step_rec,
                        step_record(c, settings, kind, timing, update));
  DICE_ASSIGN_OR_RETURN(std::vector<rewardlog::LogRecord> records,
                        metric_records(c, settings, timing, update));
  for (rewardlog::LogRecord& r : more) records.push_back(std::move(r));
  records.push_back(std::move(step_rec));
  return log.append(std::move(records));
}

Result<std::vector<rewardlog::LogRecord>> schedule_records(const PhasePlan& plan,
                                                           const ScheduleReport& report,
                                                           const StepSettings& settings) {
  const std::string prefix = "schedule/" + plan.name + "/";
  std::vector<std::pair<std::string, double>> values = {{"open_levels", report.open_levels},
                                                        {"passed_over", report.passed_over},
                                                        {"band_fallbacks", report.band_fallbacks}};
  for (const auto& [level, rate] : report.rolling_correct) {
    values.emplace_back(
        "level_" + (level.empty() ? std::string("none") : level) + "/rolling_correct", rate);
  }
  for (const std::string& level : report.promoted) {
    DICE_LOG(Info) << "level promoted: the next level opens" << kv("phase", plan.name)
                   << kv("level", level) << kv("open_levels", report.open_levels)
                   << kv("after_step", settings.step)
                   << kv("threshold", plan.schedule.promotion.threshold)
                   << kv("window", plan.schedule.promotion.window);
  }
  return metric_values(settings, prefix, values);
}

Result<std::vector<rewardlog::LogRecord>> carry_records(const PolicyUpdate& update,
                                                        const StepSettings& settings) {
  std::vector<std::pair<std::string, double>> values = {
      {"learner/carried_samples", static_cast<double>(update.carried_out)}};
  if (update.ran) values.emplace_back("learner/lr", update.lr);
  return metric_values(settings, "", values);
}

void log_step_line(int k, const PhasePlan& plan, std::uint64_t global_step, const StepCounts& c,
                   double seconds, double span_seconds, double eta, std::uint64_t policy_version,
                   const PolicyUpdate& update, const ScheduleReport& schedule,
                   const char* policy_update, const std::string& reward_mode, int ahead) {
  // How much the rollouts explored and what the update did: the readouts that say why a run
  // does not learn ("-": not measured, or no update ran).
  const rewardlog::ExplorationRates explored = rewardlog::exploration_rates(c.exploration);
  const auto shown = [](bool known, double value, int digits) {
    return known && std::isfinite(value) ? fixed_text(value, digits) : std::string("-");
  };
  DICE_LOG(Info)
      << "step " << k << "/" << plan.steps << " of phase " << plan.name << kv("step", global_step)
      << kv("candidates", c.verdicts)
      << kv("candidates_per_s", fixed_text(c.candidates / std::max(span_seconds, 1e-3), 2))
      << kv("truncated", c.truncated)
      << kv("correct_rate", fixed_text(c.verdicts ? double(c.correct) / c.verdicts : 0, 3))
      << kv("mean_reward", fixed_text(mean_reward(c), 3)) << kv("groups_dropped", c.groups_dropped)
      << kv("groups_skipped", c.groups_skipped) << kv("groups_judged", c.exploration.groups_judged)
      << kv("groups_mixed", c.exploration.groups_mixed)
      << kv("distinct_texts", shown(true, explored.distinct_texts_mean, 2))
      << kv("group_size", c.exploration.group_size)
      << kv("dropped_distinct_texts", shown(true, explored.dropped_distinct_texts_mean, 2))
      << kv("tasks", c.tasks) << kv("stale", c.stale_dropped)
      << kv("staleness_mean", fixed_text(c.staleness_mean, 2))
      << kv("staleness_max", c.staleness_max)
      << kv("worker_errors", c.rollout_errors + c.eval_errors)
      << kv("internal_errors", c.internal_errors)
      << kv("internal_error_share", shown(true, internal_error_share(c), 3))
      << kv("seconds", fixed_text(seconds, 1)) << kv("eta_s", fixed_text(eta, 0))
      << kv("policy_version", policy_version)
      << kv("loss", update.ran ? fixed_text(update.loss, 5) : std::string("-"))
      << kv("kl", shown(update.ran, update.kl, 6))
      << kv("clip_fraction", shown(update.ran, update.clip_fraction, 3))
      << kv("grad_norm", shown(update.ran, update.grad_norm, 4))
      << kv("update_s", fixed_text(update.seconds, 1))
      << kv("importance_mean",
            update.ran ? fixed_text(update.importance_mean, 3) : std::string("-"))
      << kv("policy_update", plan.type == PhaseType::kEval ? "none (eval phase)" : policy_update)
      << kv("reward_mode", reward_mode) << kv("ahead", ahead)
      << kv("open_levels", schedule.open_levels) << kv("passed_over", schedule.passed_over)
      << (update.ran ? kv("lr", update.lr) : kv("lr", "-")) << kv("carried_in", update.carried_in)
      << kv("carried_samples", update.carried_out);
  if (const double share = internal_error_share(c); rewardlog::internal_error_alert(share)) {
    DICE_LOG(Warn) << "the reward service could not reach " << c.internal_errors << " verdicts"
                   << kv("step", global_step) << kv("internal_error_share", fixed_text(share, 3))
                   << kv("alert_above", rewardlog::kInternalErrorAlertShare)
                   << kv("scored_as", c.unscored_internal_errors ? "nothing" : "failures")
                   << kv("see", "the reward workers' logs (verdict ... failure=internalError)");
  }
}

Status report_evaluation(const PhasePlan& plan, const eval::EvalTally& tally,
                         std::uint64_t policy_version, std::uint64_t global_step,
                         const std::string& run_id, const std::string& reward_mode,
                         rewardlog::RewardLogWriter& log) {
  DICE_LOG(Info) << "evaluation of phase " << plan.name << ": " << eval_summary(tally)
                 << kv("policy_version", policy_version) << kv("reward_mode", reward_mode);
  const std::int64_t now = wire::unix_millis_now();
  const std::uint64_t step = global_step == 0 ? 0 : global_step - 1;
  std::vector<rewardlog::LogRecord> records;
  auto add = [&](const std::string& where, const eval::TableCell& cell) -> Status {
    for (const auto& [name, value] : {std::pair<const char*, double>{"exec", cell.exec},
                                      {"fast_1", cell.fast_1},
                                      {"fast_2", cell.fast_2},
                                      {"tasks", cell.problems},
                                      {"geo_mean_speedup", cell.geo_mean_speedup}}) {
      DICE_ASSIGN_OR_RETURN(
          rewardlog::LogRecord r,
          metric_record(run_id, "eval/" + plan.name + where + "/" + name, step, value, now));
      records.push_back(std::move(r));
    }
    return Status::ok_status();
  };
  for (const auto& [level, cell] : tally.levels()) {
    DICE_RETURN_IF_ERROR(add("/level_" + (level.empty() ? std::string("none") : level), cell));
  }
  DICE_RETURN_IF_ERROR(add("", tally.all()));
  return log.append(std::move(records));
}

}  // namespace dice
