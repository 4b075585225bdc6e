#include "learner/run/step_flight.h"

#include <algorithm>

#include "common/log.h"
#include "net/wire/envelope.h"
#include "tasks/answer_verdict.h"

namespace dice {
namespace {

using Clock = std::chrono::steady_clock;

// A finished group as one task of the evaluation table: its samples in sample order (one a
// service fault left unscored counts as missing: not correct).
void tally_group(const FinishedGroup& group, eval::EvalTally* tally) {
  std::vector<eval::AnswerVerdict> samples;
  for (const FinishedSample& sample : group.samples) {
    samples.push_back(eval::answer_of(sample.verdict.root().getBody().getVerdict()));
    samples.back().judged = sample.scored;
  }
  tally->add_task(group.task->level, samples);
}

// A finished group's outcome for the scheduler (and a sampled evaluation's rates): its judged
// candidates and the correct ones (a service fault says nothing about the candidate, so it is not
// counted).
void observe_group(const FinishedGroup& group, PhaseContext& context) {
  int correct = 0, judged = 0;
  for (const FinishedSample& sample : group.samples) {
    if (!sample.scored) continue;
    ++judged;
    correct += sample.verdict.root().getBody().getVerdict().getCorrect() ? 1 : 0;
  }
  context.scheduler->observe(*group.task, correct, judged);
  if (context.evaluated != nullptr) {
    auto& rate = (*context.evaluated)[group.task->id];
    rate.first += correct;
    rate.second += judged;
  }
}

// Writes the finished groups' records (queued; flushed at the end of the step); a constant group
// starts a task in its place while the step has refills left (and no stop was asked for).
Status write_groups(StepWork& work, PhaseContext& context) {
  StepTracker& tracker = work.tracker;
  for (const FinishedGroup& group : tracker.take_finished()) {
    if (group.complete) {
      (group.dropped ? context.metrics.groups_dropped : context.metrics.groups_used)->add();
    } else {
      context.metrics.groups_skipped->add();
    }
    if (group.complete) observe_group(group, context);
    if (group.complete && group.dropped && work.refills_left > 0 && !*context.stopping) {
      --work.refills_left;
      tracker.start(context.scheduler->next(1, work.selection), Clock::now());
    }
    DICE_ASSIGN_OR_RETURN(auto records, group_records(group, tracker.settings(), &context.logged,
                                                      wire::unix_millis_now()));
    if (!records.empty()) DICE_RETURN_IF_ERROR(context.log.enqueue(std::move(records)));
    if (context.tally != nullptr) {
      tally_group(group, context.tally);
      continue;  // an evaluation trains nothing
    }
    if (group.complete && !group.dropped && context.updates_policy) {
      for (const FinishedSample& sample : group.samples) {
        if (!sample.scored) continue;
        work.traces.push_back(sample.trace);
        work.trace_keys.emplace_back(group.task->id, sample.sample_index);
      }
    }
  }
  return Status::ok_status();
}

}  // namespace

// The step's traces in (task id, sample index) order.
void sort_traces(StepWork& work) {
  std::vector<std::size_t> order(work.traces.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return work.trace_keys[a] < work.trace_keys[b]; });
  std::vector<TraceSample> sorted;
  sorted.reserve(order.size());
  for (std::size_t i : order) sorted.push_back(std::move(work.traces[i]));
  work.traces = std::move(sorted);
}

// Drops the traces sampled more than `max_staleness` versions before `trained_version` (the
// asynchronous mode's stale: drop); returns how many.
std::uint32_t drop_stale_traces(StepWork& work, std::uint64_t trained_version,
                                std::uint64_t max_staleness) {
  std::vector<TraceSample> kept;
  std::vector<std::pair<std::string, std::uint32_t>> kept_keys;
  for (std::size_t i = 0; i < work.traces.size(); ++i) {
    if (work.traces[i].policy_version + max_staleness < trained_version) continue;
    kept.push_back(std::move(work.traces[i]));
    kept_keys.push_back(std::move(work.trace_keys[i]));
  }
  const auto dropped = static_cast<std::uint32_t>(work.traces.size() - kept.size());
  work.traces = std::move(kept);
  work.trace_keys = std::move(kept_keys);
  return dropped;
}

// Drives the steps in flight until the first of them (the one the next update trains on) has
// ended; the others go on meanwhile: their requests are submitted, their results handled by the
// step that asked, their finished groups written. Returns whether the first was cut short by
// the drain timeout.
Result<bool> drive_front(Flight& flight, PhaseContext& context) {
  StepWork& front = *flight.front();
  Clock::time_point drain_deadline{};
  bool interrupted = false;
  while (true) {
    std::size_t open_groups = 0;
    for (auto& work : flight) {
      for (auto& item : work->tracker.take_outbox()) context.backlog.push_back(std::move(item));
      open_groups += work->tracker.open_groups();
    }
    while (!context.backlog.empty()) {
      Status submitted =
          context.dispatcher.submit(context.backlog.front(), std::chrono::milliseconds(0));
      if (submitted.code() == StatusCode::kUnavailable) break;  // queue full: retry next round
      if (!submitted.ok()) return submitted;
      context.backlog.pop_front();
    }
    context.metrics.backlog->set(static_cast<double>(context.backlog.size()));
    context.metrics.open_groups->set(static_cast<double>(open_groups));
    for (auto& work : flight) DICE_RETURN_IF_ERROR(write_groups(*work, context));
    if (front.tracker.done()) break;

    auto result = context.dispatcher.next_result(context.timeouts.poll_interval);
    if (result.ok()) {
      StepWork* owner = &front;  // a result nobody asked for is the front's to count
      for (auto& work : flight) {
        if (work->tracker.owns(result->work_id)) {
          owner = work.get();
          break;
        }
      }
      owner->tracker.handle(std::move(result).value());
    } else if (result.status().code() != StatusCode::kTimeout) {
      return result.status();
    }
    const auto now = Clock::now();
    for (auto& work : flight) work->tracker.expire(now, context.timeouts.group_timeout);
    if (!*context.stopping && context.stop_requested()) {
      *context.stopping = true;
      drain_deadline = now + context.timeouts.drain_timeout;
      DICE_LOG(Info) << "stop requested: no new steps; draining the step in flight"
                     << kv("open_groups", front.tracker.open_groups())
                     << kv("steps_ahead_abandoned", flight.size() - 1)
                     << kv("drain_timeout_s", context.timeouts.drain_timeout.count() / 1000.0);
      // Steps ahead will never be trained on: a resume samples them again.
      for (std::size_t i = 1; i < flight.size(); ++i) {
        flight[i]->tracker.abandon_all("stopped while a step ahead");
      }
    }
    if (*context.stopping && !front.tracker.done()) {
      // Nothing can finish without a worker, so waiting out the timeout would only delay exit.
      const bool no_workers = context.dispatcher.stats().workers == 0;
      if (now >= drain_deadline || no_workers) {
        front.tracker.abandon_all(no_workers ? "stopped with no worker connected"
                                             : "drain timeout");
        interrupted = true;
      }
    }
    // Skipped groups' work is cancelled, queued or at a worker: nobody waits for its answers.
    for (auto& work : flight) {
      const std::vector<std::uint64_t> unwanted = work->tracker.take_unwanted();
      if (!unwanted.empty()) context.dispatcher.cancel(unwanted);
    }
    // Metrics move as results arrive, not only at the end of the step.
    for (auto& work : flight) {
      const StepCounts& c = work->tracker.counts();
      StepCounts& seen = work->seen;
      context.metrics.candidates->add(c.candidates - seen.candidates);
      context.metrics.verdicts->add(c.verdicts - seen.verdicts);
      context.metrics.correct->add(c.correct - seen.correct);
      context.metrics.stale->add(c.stale_dropped - seen.stale_dropped);
      context.metrics.rollout_errors->add(c.rollout_errors - seen.rollout_errors);
      context.metrics.reward_errors->add(c.eval_errors - seen.eval_errors);
      seen = c;
    }
  }
  return interrupted;
}

}  // namespace dice
