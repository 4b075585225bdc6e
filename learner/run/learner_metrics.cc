#include "learner/run/learner_metrics.h"

namespace dice {

Result<LearnerMetrics> LearnerMetrics::create(service::MetricsRegistry& registry) {
  LearnerMetrics m;
  DICE_ASSIGN_OR_RETURN(m.steps, registry.counter("dice_learner_steps_total", "Steps finished."));
  DICE_ASSIGN_OR_RETURN(m.candidates,
                        registry.counter("dice_learner_candidates_total",
                                         "Candidates received and sent for evaluation."));
  DICE_ASSIGN_OR_RETURN(m.verdicts,
                        registry.counter("dice_learner_verdicts_total", "Verdicts received."));
  DICE_ASSIGN_OR_RETURN(m.correct, registry.counter("dice_learner_verdicts_correct_total",
                                                    "Verdicts saying compiled and correct."));
  DICE_ASSIGN_OR_RETURN(m.stale, registry.counter("dice_learner_candidates_stale_total",
                                                  "Candidates dropped as too stale."));
  const char* errors_help = "Error replies from workers, by worker role.";
  DICE_ASSIGN_OR_RETURN(m.rollout_errors, registry.counter("dice_learner_worker_errors_total",
                                                           errors_help, {{"role", "rollout"}}));
  DICE_ASSIGN_OR_RETURN(m.reward_errors, registry.counter("dice_learner_worker_errors_total",
                                                          errors_help, {{"role", "reward"}}));
  const char* groups_help = "Task groups finished, by outcome.";
  DICE_ASSIGN_OR_RETURN(m.groups_used, registry.counter("dice_learner_groups_total", groups_help,
                                                        {{"outcome", "used"}}));
  DICE_ASSIGN_OR_RETURN(m.groups_dropped, registry.counter("dice_learner_groups_total", groups_help,
                                                           {{"outcome", "dropped"}}));
  DICE_ASSIGN_OR_RETURN(m.groups_skipped, registry.counter("dice_learner_groups_total", groups_help,
                                                           {{"outcome", "skipped"}}));
  DICE_ASSIGN_OR_RETURN(m.step, registry.gauge("dice_learner_step", "Global step in progress."));
  DICE_ASSIGN_OR_RETURN(m.open_groups, registry.gauge("dice_learner_open_groups",
                                                      "Groups of the step not yet finished."));
  DICE_ASSIGN_OR_RETURN(m.backlog,
                        registry.gauge("dice_learner_submit_backlog",
                                       "Requests waiting for room in the dispatcher's queue."));
  DICE_ASSIGN_OR_RETURN(m.policy_version,
                        registry.gauge("dice_learner_policy_version",
                                       "Policy version the learner holds (0: no update in this "
                                       "build)."));
  return m;
}

}  // namespace dice
