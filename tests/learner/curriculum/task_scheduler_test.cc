// TaskScheduler on scripted histories: sequential select walks and wraps, a step never holds a
// task twice (refills included), the mixed scheduler opens the next level exactly when the
// newest open level's rolling correct rate reaches the threshold over a full window, and the
// pass-rate band revisits the tasks inside it (least recently taken first) and passes over tasks
// too easy or too hard, filling a step with them only when nothing else is left.
#include "learner/curriculum/task_scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dice {
namespace {

// Tasks with ids "a", "b", ... and the given levels, in this order.
std::vector<LearnerTask> tasks_of(const std::vector<std::string>& levels) {
  std::vector<LearnerTask> tasks(levels.size());
  for (std::size_t i = 0; i < levels.size(); ++i) {
    tasks[i].id = std::string(1, static_cast<char>('a' + i));
    tasks[i].level = levels[i];
  }
  return tasks;
}

std::string ids(const std::vector<const LearnerTask*>& step) {
  std::string out;
  for (const LearnerTask* t : step) out += t->id;
  return out;
}

const LearnerTask& by_id(const std::vector<LearnerTask>& tasks, char id) {
  return tasks[static_cast<std::size_t>(id - 'a')];
}

TEST(TaskSchedulerTest, SequentialSelectWalksInOrderAndWraps) {
  const auto tasks = tasks_of({"1", "1", "2", "2"});
  TaskScheduler s(&tasks, {});
  EXPECT_EQ(ids(s.next(3)), "abc");
  s.end_step();
  EXPECT_EQ(ids(s.next(3)), "dab");
  s.end_step();
  EXPECT_EQ(ids(s.next(9)), "cdab");  // capped: a step never holds a task twice
  const ScheduleReport report = s.end_step();
  EXPECT_EQ(report.open_levels, 2);  // sequential select draws from every level
  EXPECT_TRUE(report.promoted.empty());
}

TEST(TaskSchedulerTest, RefillsNeverRepeatATaskOfTheStep) {
  const auto tasks = tasks_of({"1", "1", "1", "1"});
  TaskScheduler s(&tasks, {});
  EXPECT_EQ(ids(s.next(3)), "abc");
  EXPECT_EQ(ids(s.next(1)), "d");  // a refill in the same step
  EXPECT_EQ(ids(s.next(1)), "");   // every task is in the step already
  s.end_step();
  EXPECT_EQ(ids(s.next(2)), "ab");
}

// The asynchronous mode draws the next step before the one in front has ended: each step keeps
// its own selection, so the next one may take a task the front holds, and refills of either
// never repeat a task of their own step.
TEST(TaskSchedulerTest, StepsInFlightEachHoldTheirOwnSelection) {
  const auto tasks = tasks_of({"1", "1", "1", "1", "1"});
  TaskScheduler s(&tasks, {});
  StepSelection front, ahead;
  EXPECT_EQ(ids(s.next(3, front)), "abc");
  EXPECT_EQ(ids(s.next(3, ahead)), "dea");  // not "de": a is in the other step only
  EXPECT_EQ(ids(s.next(1, front)), "d");    // a refill of the front step
  EXPECT_EQ(ids(s.next(1, ahead)), "b");    // and of the step ahead: e and a it holds
  EXPECT_EQ(ids(s.next(9, ahead)), "c");    // what is left for it
  EXPECT_EQ(s.end_step(front).open_levels, 1);
  EXPECT_TRUE(front.tasks.empty());  // end_step() empties the selection it ends
  EXPECT_EQ(ahead.tasks.size(), 5u);
}

TEST(TaskSchedulerTest, MixedOpensTheNextLevelWhenTheRollingRatePassesTheThreshold) {
  const auto tasks = tasks_of({"1", "1", "2", "2", "3"});
  TaskSchedulerOptions o;
  o.scheduling = TaskScheduling::kMixed;
  o.promotion.threshold = 0.5;
  o.promotion.window = 4;
  TaskScheduler s(&tasks, o);
  EXPECT_EQ(s.levels(), (std::vector<std::string>{"1", "2", "3"}));

  // Step 1: only level 1 is open (two tasks). 1 of 4 correct: 0.25, below the threshold.
  EXPECT_EQ(ids(s.next(3)), "ab");
  s.observe(by_id(tasks, 'a'), 1, 2);
  s.observe(by_id(tasks, 'b'), 0, 2);
  ScheduleReport report = s.end_step();
  EXPECT_EQ(report.open_levels, 1);
  EXPECT_TRUE(report.promoted.empty());
  EXPECT_DOUBLE_EQ(report.rolling_correct[0].second, 0.25);

  // Step 2: 3 of the last 4 correct (the window drops step 1's): 0.75 opens level 2.
  EXPECT_EQ(ids(s.next(3)), "ab");
  s.observe(by_id(tasks, 'a'), 2, 2);
  s.observe(by_id(tasks, 'b'), 1, 2);
  report = s.end_step();
  EXPECT_EQ(report.promoted, (std::vector<std::string>{"2"}));
  EXPECT_EQ(report.open_levels, 2);
  EXPECT_DOUBLE_EQ(report.rolling_correct[0].second, 0.75);

  // Step 3: both open levels in turn. Level 2 all wrong: level 3 stays closed, however well
  // level 1 does.
  EXPECT_EQ(ids(s.next(4)), "acbd");
  s.observe(by_id(tasks, 'a'), 2, 2);
  s.observe(by_id(tasks, 'b'), 2, 2);
  s.observe(by_id(tasks, 'c'), 0, 2);
  s.observe(by_id(tasks, 'd'), 0, 2);
  report = s.end_step();
  EXPECT_TRUE(report.promoted.empty());
  EXPECT_EQ(report.open_levels, 2);
  EXPECT_DOUBLE_EQ(report.rolling_correct[1].second, 0.0);
  EXPECT_EQ(report.rolling_candidates[1].second, 4);

  // Step 4: exactly at the threshold (2 of 4) opens level 3; one promotion per step.
  EXPECT_EQ(ids(s.next(4)), "acbd");
  s.observe(by_id(tasks, 'c'), 1, 2);
  s.observe(by_id(tasks, 'd'), 1, 2);
  report = s.end_step();
  EXPECT_EQ(report.promoted, (std::vector<std::string>{"3"}));
  EXPECT_EQ(ids(s.next(5)), "acebd");  // levels 1, 2, 3, then 1 and 2 again
}

TEST(TaskSchedulerTest, NoPromotionBeforeTheWindowIsFull) {
  const auto tasks = tasks_of({"1", "2"});
  TaskSchedulerOptions o;
  o.scheduling = TaskScheduling::kMixed;
  o.promotion.threshold = 0.5;
  o.promotion.window = 8;
  TaskScheduler s(&tasks, o);
  EXPECT_EQ(ids(s.next(2)), "a");
  s.observe(by_id(tasks, 'a'), 4, 4);  // all correct, but 4 of a window of 8
  EXPECT_TRUE(s.end_step().promoted.empty());
  EXPECT_EQ(ids(s.next(2)), "a");
  s.observe(by_id(tasks, 'a'), 4, 4);
  EXPECT_EQ(s.end_step().promoted, (std::vector<std::string>{"2"}));
}

TEST(TaskSchedulerTest, PassRateBandPassesOverTooEasyAndTooHardTasks) {
  const auto tasks = tasks_of({"1", "1", "1", "1", "1"});
  TaskSchedulerOptions o;
  o.band = PassRateBand{0.2, 0.8, 1};
  TaskScheduler s(&tasks, o);
  // Nothing sampled yet: every task is taken.
  EXPECT_EQ(ids(s.next(5)), "abcde");
  s.observe(by_id(tasks, 'a'), 0, 4);  // 0.0: too hard
  s.observe(by_id(tasks, 'b'), 4, 4);  // 1.0: too easy
  s.observe(by_id(tasks, 'c'), 2, 4);  // 0.5
  s.observe(by_id(tasks, 'd'), 1, 4);  // 0.25
  s.observe(by_id(tasks, 'e'), 3, 4);  // 0.75
  EXPECT_EQ(s.end_step().passed_over, 0);

  // The three inside the band are revisited: the step needs no walk past the others.
  EXPECT_EQ(ids(s.next(3)), "cde");
  ScheduleReport report = s.end_step();
  EXPECT_EQ(report.passed_over, 0);
  EXPECT_EQ(report.band_fallbacks, 0);

  // Four wanted, three in the band: the walk passes over a and b, and takes a back to fill.
  EXPECT_EQ(ids(s.next(4)), "cdea");
  report = s.end_step();
  EXPECT_EQ(report.passed_over, 1);  // b
  EXPECT_EQ(report.band_fallbacks, 1);

  // Five wanted: both passed-over tasks fill the step, and say so.
  const std::vector<const LearnerTask*> step = s.next(5);
  EXPECT_EQ(step.size(), 5u);
  EXPECT_EQ(ids({step.begin(), step.begin() + 3}), "cde");
  report = s.end_step();
  EXPECT_EQ(report.band_fallbacks, 2);
  EXPECT_EQ(report.passed_over, 0);  // taken after all
}

// DICE's band (0, 1): a task the policy solves sometimes comes back in the next steps, before
// the walk goes on to new tasks, until it is solved every time (or never); a solved or hopeless
// one is not taken again. Without revisits every task would be sampled once per pass over the
// phase, whatever its groups showed.
TEST(TaskSchedulerTest, PassRateBandRevisitsTasksThePolicySolvesSometimes) {
  const auto tasks = tasks_of({"1", "1", "1", "1", "1", "1"});
  TaskSchedulerOptions o;
  o.band = PassRateBand{0.0, 1.0, 1};
  TaskScheduler s(&tasks, o);
  EXPECT_EQ(ids(s.next(2)), "ab");
  s.observe(by_id(tasks, 'a'), 1, 4);  // mixed: revisit
  s.observe(by_id(tasks, 'b'), 4, 4);  // solved
  s.end_step();
  EXPECT_EQ(ids(s.next(2)), "ac");
  s.observe(by_id(tasks, 'a'), 2, 4);
  s.observe(by_id(tasks, 'c'), 0, 4);  // hopeless
  s.end_step();
  EXPECT_EQ(ids(s.next(2)), "ad");
  s.observe(by_id(tasks, 'a'), 4, 4);  // now solved: out
  s.observe(by_id(tasks, 'd'), 3, 4);
  s.end_step();
  EXPECT_EQ(ids(s.next(2)), "de");
  EXPECT_EQ(s.end_step().passed_over, 0);
}

// Primed by an evaluation of the same policy, the band's first step already revisits the tasks
// solved sometimes and passes over the hopeless and the solved ones: without it the first pass
// over the phase spends a group on each (a third of the RL steps of the H100 experiment on
// 2026-12-08 went to levels the checkpoint never solved).
TEST(TaskSchedulerTest, PassRateBandPrimedByAnEvaluationStartsOnTasksWithSignal) {
  const auto tasks = tasks_of({"1", "1", "1", "1", "1", "1"});
  TaskSchedulerOptions o;
  o.band = PassRateBand{0.0, 1.0, 1};
  const std::map<std::string, std::pair<int, int>> evaluation = {
      {"a", {0, 8}}, {"b", {3, 8}}, {"c", {8, 8}}, {"d", {2, 8}}, {"z", {1, 8}}, {"e", {0, 0}}};
  TaskScheduler primed(&tasks, o);
  EXPECT_EQ(primed.prime(evaluation), 4);  // z is no task of the phase; e has no judged sample
  EXPECT_EQ(ids(primed.next(3)), "bde");
  EXPECT_EQ(primed.end_step().passed_over, 2);  // a and c

  TaskScheduler unprimed(&tasks, o);
  EXPECT_EQ(ids(unprimed.next(3)), "abc");

  TaskSchedulerOptions no_band;
  TaskScheduler plain(&tasks, no_band);
  EXPECT_EQ(plain.prime(evaluation), 0);
  EXPECT_EQ(ids(plain.next(3)), "abc");
}

// More tasks inside the band than a step takes: they take turns, least recently taken first.
TEST(TaskSchedulerTest, PassRateBandRevisitsTakeTurns) {
  const auto tasks = tasks_of({"1", "1", "1", "1"});
  TaskSchedulerOptions o;
  o.band = PassRateBand{0.0, 1.0, 4};
  TaskScheduler s(&tasks, o);
  EXPECT_EQ(ids(s.next(4)), "abcd");
  for (char id : std::string("abcd")) s.observe(by_id(tasks, id), 1, 2);
  s.end_step();
  for (const char* expected : {"ab", "cd", "ab"}) {
    const std::string step = ids(s.next(2));
    EXPECT_EQ(step, expected);
    for (char id : step) s.observe(by_id(tasks, id), 1, 2);
    s.end_step();
  }
}

TEST(TaskSchedulerTest, PassRateBandReadsTheLastWindowGroups) {
  const auto tasks = tasks_of({"1", "1"});
  TaskSchedulerOptions o;
  o.band = PassRateBand{0.1, 0.9, 2};
  TaskScheduler s(&tasks, o);
  s.next(2);
  s.observe(by_id(tasks, 'a'), 4, 4);  // a: 1.0 alone, out of the band
  s.observe(by_id(tasks, 'b'), 1, 4);
  s.end_step();
  EXPECT_EQ(ids(s.next(1)), "b");
  s.end_step();
  s.observe(by_id(tasks, 'a'), 0, 4);  // a: (4 + 0) / 8 = 0.5 over its last two groups
  EXPECT_EQ(ids(s.next(1)), "a");
  s.end_step();
  s.observe(by_id(tasks, 'a'), 0, 4);  // a: (0 + 0) / 8: the first group fell out of the window
  s.observe(by_id(tasks, 'b'), 2, 4);
  EXPECT_EQ(ids(s.next(2)), "ba");  // a only to fill the step
  EXPECT_EQ(s.end_step().band_fallbacks, 1);
}

// A scheduler made again from state() goes on exactly as the one it was taken from: the same
// selections, promotions and band decisions, step after step.
TEST(TaskSchedulerTest, ARestoredSchedulerContinuesTheSameSchedule) {
  const auto tasks = tasks_of({"1", "1", "1", "2", "2", "3"});
  TaskSchedulerOptions o;
  o.scheduling = TaskScheduling::kMixed;
  o.promotion.threshold = 0.5;
  o.promotion.window = 4;
  o.band = PassRateBand{0.2, 0.8, 2};
  TaskScheduler original(&tasks, o);
  // A scripted outcome per task and step: some too easy, some too hard.
  auto play = [&](TaskScheduler& s, int step) {
    std::string out;
    for (const LearnerTask* t : s.next(3)) {
      out += t->id;
      const int correct = (t->id[0] - 'a' + step) % 3;  // 0, 1 or 2 of 2
      s.observe(*t, correct, 2);
    }
    const ScheduleReport r = s.end_step();
    return out + "/" + std::to_string(r.open_levels) + "/" + std::to_string(r.passed_over);
  };
  for (int step = 0; step < 3; ++step) play(original, step);

  TaskScheduler restored(&tasks, o);
  EXPECT_TRUE(restored.restore(original.state()).empty());
  for (int step = 3; step < 9; ++step) {
    EXPECT_EQ(play(restored, step), play(original, step)) << "step " << step;
  }
}

TEST(TaskSchedulerTest, RestoringOverAnEditedPhaseSaysWhatDidNotFit) {
  const auto before = tasks_of({"1", "1", "2"});
  TaskSchedulerOptions o;
  o.scheduling = TaskScheduling::kMixed;
  o.promotion.window = 2;
  o.band = PassRateBand{0.0, 1.0, 2};
  TaskScheduler s(&before, o);
  s.next(1);  // takes "a": "b" is next in level 1's queue
  s.observe(by_id(before, 'a'), 1, 2);
  s.end_step();
  TaskSchedulerState state = s.state();
  EXPECT_EQ(state.next_task, (std::vector<std::string>{"b", "c"}));

  // The edited phase lost task "b" and level 2, and has a level 4.
  std::vector<LearnerTask> after = tasks_of({"1", "1", "4"});
  after[1].id = "z";
  TaskScheduler edited(&after, o);
  const std::vector<std::string> notes = edited.restore(state);
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_NE(notes[0].find("task b, next in queue 1, is no longer in the phase"), std::string::npos)
      << notes[0];
  EXPECT_NE(notes[1].find("level 2 is no longer in the phase"), std::string::npos) << notes[1];
  // The task still there keeps its history and the level its rolling rate.
  EXPECT_EQ(edited.state().history.at("a"), (std::vector<std::pair<int, int>>{{1, 2}}));
  EXPECT_EQ(edited.state().recent.at("1"), (std::vector<bool>{true, false}));
}
}  // namespace
}  // namespace dice
