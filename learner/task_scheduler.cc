#include "learner/task_scheduler.h"

#include <algorithm>

namespace dice {

TaskScheduler::TaskScheduler(const std::vector<LearnerTask>* tasks, TaskSchedulerOptions options)
    : options_(std::move(options)) {
  for (const LearnerTask& task : *tasks) {
    if (level_index_.emplace(task.level, levels_.size()).second) levels_.push_back(task.level);
  }
  recent_.resize(levels_.size());
  if (options_.scheduling == TaskScheduling::kMixed) {
    queues_.resize(levels_.size());
    for (const LearnerTask& task : *tasks) queues_[level_index_[task.level]].tasks.push_back(&task);
  } else {
    queues_.resize(1);
    for (const LearnerTask& task : *tasks) queues_[0].tasks.push_back(&task);
  }
  open_ = std::min<std::size_t>(1, queues_.size());
}

int TaskScheduler::open_levels() const {
  return static_cast<int>(options_.scheduling == TaskScheduling::kMixed ? open_ : levels_.size());
}

bool TaskScheduler::in_band(const LearnerTask& task) const {
  if (!options_.band) return true;
  auto it = history_.find(&task);
  if (it == history_.end() || it->second.empty()) return true;  // not sampled yet: taken
  int correct = 0, judged = 0;
  for (const auto& [c, j] : it->second) correct += c, judged += j;
  if (judged == 0) return true;
  const double rate = static_cast<double>(correct) / judged;
  return rate >= options_.band->lo && rate <= options_.band->hi;
}

const LearnerTask* TaskScheduler::take_from(Queue& queue,
                                            const std::vector<const LearnerTask*>& taken,
                                            bool any) {
  for (std::size_t tried = 0; tried < queue.tasks.size(); ++tried) {
    const LearnerTask* task = queue.tasks[queue.position];
    queue.position = (queue.position + 1) % queue.tasks.size();
    if (std::find(taken.begin(), taken.end(), task) != taken.end()) continue;
    if (any || in_band(*task)) return task;
    passed_over_.insert(task);
  }
  return nullptr;
}

std::vector<const LearnerTask*> TaskScheduler::next(std::size_t count) {
  std::size_t available = 0;
  for (std::size_t q = 0; q < open_; ++q) available += queues_[q].tasks.size();
  count = std::min(count, available - std::min(available, step_tasks_.size()));
  const std::size_t wanted = step_tasks_.size() + count;
  // Open levels in turn (one queue under sequential_select), band first, then anything left.
  for (bool any : {false, true}) {
    bool progress = true;
    while (step_tasks_.size() < wanted && progress) {
      progress = false;
      for (std::size_t q = 0; q < open_ && step_tasks_.size() < wanted; ++q) {
        if (const LearnerTask* task = take_from(queues_[q], step_tasks_, any)) {
          step_tasks_.push_back(task);
          band_fallbacks_ += any ? 1 : 0;
          progress = true;
        }
      }
    }
  }
  return {step_tasks_.end() - static_cast<std::ptrdiff_t>(count), step_tasks_.end()};
}

void TaskScheduler::observe(const LearnerTask& task, int correct, int judged) {
  if (judged <= 0) return;
  if (options_.band) {
    auto& groups = history_[&task];
    groups.emplace_back(correct, judged);
    while (groups.size() > static_cast<std::size_t>(options_.band->window)) groups.pop_front();
  }
  auto level = level_index_.find(task.level);
  if (level == level_index_.end()) return;  // not a task of this phase
  std::deque<bool>& recent = recent_[level->second];
  for (int i = 0; i < judged; ++i) recent.push_back(i < correct);
  while (recent.size() > static_cast<std::size_t>(options_.promotion.window)) recent.pop_front();
}

ScheduleReport TaskScheduler::end_step() {
  promoted_.clear();
  if (options_.scheduling == TaskScheduling::kMixed && open_ < queues_.size()) {
    const std::deque<bool>& newest = recent_[open_ - 1];
    const auto correct = std::count(newest.begin(), newest.end(), true);
    if (newest.size() >= static_cast<std::size_t>(options_.promotion.window) &&
        static_cast<double>(correct) >=
            options_.promotion.threshold * static_cast<double>(newest.size())) {
      promoted_.push_back(levels_[open_]);
      ++open_;
    }
  }
  ScheduleReport report;
  report.open_levels = open_levels();
  report.passed_over = 0;
  for (const LearnerTask* task : passed_over_) {  // those the fallback took are not passed over
    const bool taken = std::find(step_tasks_.begin(), step_tasks_.end(), task) != step_tasks_.end();
    report.passed_over += taken ? 0 : 1;
  }
  report.band_fallbacks = band_fallbacks_;
  report.promoted = promoted_;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const std::deque<bool>& recent = recent_[l];
    const auto correct = std::count(recent.begin(), recent.end(), true);
    report.rolling_correct.emplace_back(
        levels_[l], recent.empty() ? 0.0 : static_cast<double>(correct) / recent.size());
    report.rolling_candidates.emplace_back(levels_[l], static_cast<int>(recent.size()));
  }
  step_tasks_.clear();
  passed_over_.clear();
  band_fallbacks_ = 0;
  return report;
}

}  // namespace dice
