#include "learner/curriculum/task_scheduler.h"

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

std::optional<double> TaskScheduler::pass_rate(const LearnerTask& task) const {
  auto it = history_.find(&task);
  if (it == history_.end()) return std::nullopt;
  int correct = 0, judged = 0;
  for (const auto& [c, j] : it->second) correct += c, judged += j;
  if (judged == 0) return std::nullopt;
  return static_cast<double>(correct) / judged;
}

bool TaskScheduler::in_band(const LearnerTask& task) const {
  if (!options_.band) return true;
  const std::optional<double> rate = pass_rate(task);
  return !rate || (*rate > options_.band->lo && *rate < options_.band->hi);
}

std::vector<const LearnerTask*> TaskScheduler::revisits(const StepSelection& step) const {
  std::vector<std::pair<std::uint64_t, const LearnerTask*>> found;  // (last taken, task)
  for (std::size_t q = 0; q < open_; ++q) {
    for (const LearnerTask* task : queues_[q].tasks) {
      if (!pass_rate(*task) || !in_band(*task)) continue;
      if (std::find(step.tasks.begin(), step.tasks.end(), task) != step.tasks.end()) continue;
      auto last = last_taken_.find(task);
      found.emplace_back(last == last_taken_.end() ? 0 : last->second, task);
    }
  }
  std::stable_sort(found.begin(), found.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const LearnerTask*> out;
  for (const auto& entry : found) out.push_back(entry.second);
  return out;
}

const LearnerTask* TaskScheduler::take_from(Queue& queue, StepSelection& step, bool any) {
  for (std::size_t tried = 0; tried < queue.tasks.size(); ++tried) {
    const LearnerTask* task = queue.tasks[queue.position];
    queue.position = (queue.position + 1) % queue.tasks.size();
    if (std::find(step.tasks.begin(), step.tasks.end(), task) != step.tasks.end()) continue;
    if (any || in_band(*task)) return task;
    step.passed_over.insert(task);
  }
  return nullptr;
}

std::vector<const LearnerTask*> TaskScheduler::next(std::size_t count) {
  return next(count, current_);
}

std::vector<const LearnerTask*> TaskScheduler::next(std::size_t count, StepSelection& step) {
  std::vector<const LearnerTask*>& taken = step.tasks;
  std::size_t available = 0;
  for (std::size_t q = 0; q < open_; ++q) available += queues_[q].tasks.size();
  count = std::min(count, available - std::min(available, taken.size()));
  const std::size_t wanted = taken.size() + count;
  // With a band, the tasks inside it first; then the open levels in turn (one queue under
  // sequential_select), band first, then anything left.
  if (options_.band) {
    for (const LearnerTask* task : revisits(step)) {
      if (taken.size() >= wanted) break;
      taken.push_back(task);
    }
  }
  for (bool any : {false, true}) {
    bool progress = true;
    while (taken.size() < wanted && progress) {
      progress = false;
      for (std::size_t q = 0; q < open_ && taken.size() < wanted; ++q) {
        if (const LearnerTask* task = take_from(queues_[q], step, any)) {
          taken.push_back(task);
          step.band_fallbacks += any ? 1 : 0;
          progress = true;
        }
      }
    }
  }
  const std::vector<const LearnerTask*> chosen(taken.end() - static_cast<std::ptrdiff_t>(count),
                                               taken.end());
  if (options_.band) {
    for (const LearnerTask* task : chosen) last_taken_[task] = ++takes_;
  }
  return chosen;
}

ScheduleReport TaskScheduler::end_step() {
  return end_step(current_);
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

int TaskScheduler::prime(const std::map<std::string, std::pair<int, int>>& rates) {
  if (!options_.band) return 0;
  int primed = 0;
  for (const Queue& queue : queues_) {
    for (const LearnerTask* task : queue.tasks) {
      auto rate = rates.find(task->id);
      if (rate == rates.end() || rate->second.second <= 0) continue;
      history_[task] = {rate->second};
      ++primed;
    }
  }
  return primed;
}

const LearnerTask* TaskScheduler::task_by_id(const std::string& id) const {
  for (const Queue& queue : queues_) {
    for (const LearnerTask* task : queue.tasks) {
      if (task->id == id) return task;
    }
  }
  return nullptr;
}

TaskSchedulerState TaskScheduler::state() const {
  TaskSchedulerState state;
  for (const Queue& queue : queues_) {
    state.next_task.push_back(queue.tasks.empty() ? std::string()
                                                  : queue.tasks[queue.position]->id);
  }
  state.open = static_cast<int>(open_);
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    state.recent[levels_[l]] = std::vector<bool>(recent_[l].begin(), recent_[l].end());
  }
  for (const auto& [task, groups] : history_) {
    state.history[task->id] = std::vector<std::pair<int, int>>(groups.begin(), groups.end());
  }
  for (const auto& [task, when] : last_taken_) state.last_taken[task->id] = when;
  return state;
}

std::vector<std::string> TaskScheduler::restore(const TaskSchedulerState& state) {
  std::vector<std::string> notes;
  if (state.next_task.size() != queues_.size()) {
    notes.push_back("the phase walks " + std::to_string(queues_.size()) + " task queue(s), the " +
                    "checkpoint " + std::to_string(state.next_task.size()) +
                    " (scheduling or levels changed): queues start at their first task");
  }
  for (std::size_t q = 0; q < queues_.size() && q < state.next_task.size(); ++q) {
    Queue& queue = queues_[q];
    const std::string& id = state.next_task[q];
    auto at = std::find_if(queue.tasks.begin(), queue.tasks.end(),
                           [&](const LearnerTask* t) { return t->id == id; });
    if (at != queue.tasks.end()) {
      queue.position = static_cast<std::size_t>(at - queue.tasks.begin());
    } else if (!id.empty()) {
      notes.push_back("task " + id + ", next in queue " + std::to_string(q + 1) +
                      ", is no longer in the phase: that queue starts at its first task");
    }
  }
  open_ = std::clamp<std::size_t>(static_cast<std::size_t>(std::max(state.open, 1)),
                                  std::min<std::size_t>(1, queues_.size()), queues_.size());
  for (const auto& [level, recent] : state.recent) {
    auto index = level_index_.find(level);
    if (index == level_index_.end()) {
      notes.push_back("level " + level + " is no longer in the phase: its rolling rate is dropped");
      continue;
    }
    recent_[index->second].assign(recent.begin(), recent.end());
  }
  std::size_t lost_tasks = 0;
  for (const auto& [id, groups] : state.history) {
    const LearnerTask* task = task_by_id(id);
    if (task == nullptr) {
      ++lost_tasks;
      continue;
    }
    history_[task].assign(groups.begin(), groups.end());
  }
  for (const auto& [id, when] : state.last_taken) {
    if (const LearnerTask* task = task_by_id(id)) {
      last_taken_[task] = when;
      takes_ = std::max(takes_, when);
    }
  }
  if (lost_tasks > 0) {
    notes.push_back(std::to_string(lost_tasks) +
                    " task(s) with a pass-rate history are no longer in the phase");
  }
  return notes;
}

ScheduleReport TaskScheduler::end_step(StepSelection& step) {
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
  // Those the fallback took after all are not passed over.
  for (const LearnerTask* task : step.passed_over) {
    const bool taken = std::find(step.tasks.begin(), step.tasks.end(), task) != step.tasks.end();
    report.passed_over += taken ? 0 : 1;
  }
  report.band_fallbacks = step.band_fallbacks;
  report.promoted = promoted_;
  for (std::size_t l = 0; l < levels_.size(); ++l) {
    const std::deque<bool>& recent = recent_[l];
    const auto correct = std::count(recent.begin(), recent.end(), true);
    report.rolling_correct.emplace_back(
        levels_[l], recent.empty() ? 0.0 : static_cast<double>(correct) / recent.size());
    report.rolling_candidates.emplace_back(levels_[l], static_cast<int>(recent.size()));
  }
  step = StepSelection{};
  return report;
}

}  // namespace dice
