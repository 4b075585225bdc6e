// TaskScheduler: which tasks each step of an rl or eval phase takes (CurriculumPhase scheduling,
// promotion, pass_rate_band; options/curriculum_options.h).
//
//   sequential_select  the phase's tasks in order (level_order, easy to hard), the next ones each
//                      step, wrapping to the start: DICE's release
//   mixed              the tasks split by level (in that order); level 1 is open at the start.
//                      Each step draws from every open level in turn, each level walking its own
//                      tasks in order and wrapping. After a step, when the newest open level's
//                      correct rate over its last promotion.window judged candidates reaches
//                      promotion.threshold, the next level opens (a promotion).
//
// With a pass-rate band (lo, hi), a task's pass rate is over its last band.window groups in the
// phase. Each step first revisits the tasks of the open levels whose rate lies strictly inside
// the band (least recently taken first): they are the ones whose groups carry a learning signal
// (DICE trains on tasks its policy solves sometimes). The rest of the step walks the queues as
// above, taking tasks not yet sampled and passing over those whose rate lies outside the band
// (too hard or already solved); when too few tasks are left for a step, passed-over tasks fill
// it (in order), and the step says how many. A step never holds a task twice (the reward log
// keys candidates by step and task).
//
// The scheduler knows only what observe() and prime() tell it, so the run loop feeds it every
// finished group (and, for a band, the same policy's evaluation of the phase's tasks); its state()
// is what a checkpoint keeps to continue the same schedule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "learner/curriculum/task_loader.h"
#include "options/curriculum_options.h"

namespace dice {

struct TaskSchedulerOptions {
  TaskScheduling scheduling = TaskScheduling::kSequentialSelect;
  PromotionOptions promotion;
  std::optional<PassRateBand> band;
};

// What one step's selection and the observations since did to the schedule.
// Where a scheduler stands between two steps, by task id and level name (not by pointer), so that
// a checkpoint can hold it and a scheduler over an edited curriculum can take it back.
struct TaskSchedulerState {
  std::vector<std::string> next_task;  // per queue: the id of the task it takes next ("": none)
  int open = 1;                        // queues the next step draws from
  // Per level: its last promotion.window candidates' correctness, oldest first.
  std::map<std::string, std::vector<bool>> recent;
  // Per task id: (correct, judged) of its last band.window groups, oldest first.
  std::map<std::string, std::vector<std::pair<int, int>>> history;
  // With a band, per task id: when it was last taken (a count of takes in the phase), which
  // orders the revisits.
  std::map<std::string, std::uint64_t> last_taken;
};

struct ScheduleReport {
  int open_levels = 0;     // levels the next step draws from (sequential: all)
  int passed_over = 0;     // tasks the band passed over in the step (and did not take after all)
  int band_fallbacks = 0;  // passed-over tasks taken anyway to fill the step
  std::vector<std::string> promoted;  // levels opened by the last end_step()
  // Per level (in level order): the correct rate over its last promotion.window candidates, and
  // how many candidates that is.
  std::vector<std::pair<std::string, double>> rolling_correct;
  std::vector<std::pair<std::string, int>> rolling_candidates;
};

// One step's selection: the tasks it took (with refills) and what the band did to it. A step
// never holds a task twice; several steps in flight at once (the asynchronous mode) each have
// their own.
struct StepSelection {
  std::vector<const LearnerTask*> tasks;
  std::set<const LearnerTask*> passed_over;  // by the band
  int band_fallbacks = 0;
};

class TaskScheduler {
 public:
  // `tasks` (ordered as load_phase_tasks leaves them) must outlive the scheduler.
  TaskScheduler(const std::vector<LearnerTask>* tasks, TaskSchedulerOptions options);

  // The step's next `count` tasks (fewer when the open levels hold fewer not yet in the step):
  // a step (its tasks, then any refills) never holds a task twice.
  std::vector<const LearnerTask*> next(std::size_t count);
  // The same for the step whose selection is `step` (several steps in flight at once).
  std::vector<const LearnerTask*> next(std::size_t count, StepSelection& step);
  // A finished group of `task`: `correct` of `judged` candidates were correct.
  void observe(const LearnerTask& task, int correct, int judged);
  // With a band, before the first step: each task of the phase that `rates` names (task id ->
  // (correct, judged) of an evaluation of the same policy) starts with that group as its
  // history, so that the first steps revisit what the policy solves sometimes and pass over what
  // it never or always solves, instead of spending a group on every task to learn it. Returns
  // the tasks primed (0 without a band).
  int prime(const std::map<std::string, std::pair<int, int>>& rates);
  // After each step: promotion (mixed), and the report of the step just ended.
  ScheduleReport end_step();
  // The same for the step whose selection is `step` (which it empties).
  ScheduleReport end_step(StepSelection& step);

  // The state between steps (after end_step()), and taking one back: a task id or level the
  // phase no longer has is left out, and each such loss is one line of the returned notes (empty
  // when the state fitted whole).
  TaskSchedulerState state() const;
  std::vector<std::string> restore(const TaskSchedulerState& state);

  const std::vector<std::string>& levels() const { return levels_; }
  // Levels the next step draws from (sequential_select: all of them).
  int open_levels() const;

 private:
  struct Queue {  // tasks walked in order, wrapping
    std::vector<const LearnerTask*> tasks;
    std::size_t position = 0;
  };

  // The task's pass rate over its last band.window groups; none before its first judged group.
  std::optional<double> pass_rate(const LearnerTask& task) const;
  // Whether the walk takes `task`: not sampled yet, or its rate inside the band (or no band).
  bool in_band(const LearnerTask& task) const;
  // Tasks of the open levels not in `step` whose rate lies inside the band, least recently
  // taken first (ties in queue order).
  std::vector<const LearnerTask*> revisits(const StepSelection& step) const;
  const LearnerTask* task_by_id(const std::string& id) const;
  // The next task of `queue` not in `taken` that the band allows (with `any`: any not in
  // `taken`); nullptr when the queue has none. Passing over a task moves the queue past it.
  const LearnerTask* take_from(Queue& queue, StepSelection& step, bool any);

  TaskSchedulerOptions options_;
  std::vector<std::string> levels_;       // distinct task levels, in task order
  std::vector<std::deque<bool>> recent_;  // per level: last promotion.window correctness
  std::map<std::string, std::size_t> level_index_;
  std::vector<Queue> queues_;  // sequential: one of every task; mixed: per level
  std::size_t open_ = 1;       // queues the next step draws from
  // Per task: (correct, judged) of its last band.window groups.
  std::map<const LearnerTask*, std::deque<std::pair<int, int>>> history_;
  std::map<const LearnerTask*, std::uint64_t> last_taken_;  // with a band: see the state's
  std::uint64_t takes_ = 0;
  StepSelection current_;  // of next(count) and end_step(): one step at a time
  std::vector<std::string> promoted_;
};

}  // namespace dice
