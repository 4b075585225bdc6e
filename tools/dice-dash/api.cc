#include "tools/dice-dash/api.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "net/wire/enum_name.h"
#include "rewardlog/export.h"
#include "rewardlog/step_exploration.h"
#include "rewardlog/step_internal_errors.h"
#include "tools/dice-dash/eval_stages.h"
#include "tools/dice-dash/trace_json.h"

namespace dice::dash {
namespace {

namespace json = boost::json;
using Query = std::map<std::string, std::string>;

json::value number(double value) {
  if (!std::isfinite(value)) return nullptr;
  return value;
}

ApiResponse error(int http_status, const std::string& kind, const std::string& message) {
  return ApiResponse{http_status, json::object{{"error", message}, {"kind", kind}}};
}

// The HTTP status and kind of a reader's error.
ApiResponse from_status(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      return error(404, "missing", status.to_string());
    case StatusCode::kCorruption:
      return error(500, "corrupt", status.to_string());
    case StatusCode::kInvalidArgument:
      return error(500, "unreadable", status.to_string());
    default:
      return error(500, "error", status.to_string());
  }
}

// A required or defaulted unsigned parameter; the error names it.
template <typename T>
Result<T> unsigned_param(const Query& query, const std::string& name, std::optional<T> fallback) {
  const auto it = query.find(name);
  if (it == query.end()) {
    if (fallback) return *fallback;
    return Status::invalid_argument("missing parameter '" + name + "'");
  }
  const std::string& text = it->second;
  T value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    return Status::invalid_argument("parameter '" + name + "' is \"" + text +
                                    "\": expected a non-negative integer");
  }
  return value;
}

Result<std::string> text_param(const Query& query, const std::string& name) {
  const auto it = query.find(name);
  if (it == query.end() || it->second.empty()) {
    return Status::invalid_argument("missing parameter '" + name + "'");
  }
  return it->second;
}

json::value parsed(const std::string& text) {
  return json::parse(text);
}

// The log named by ?log= (default 0), open; or the error response.
struct OpenLog {
  size_t index = 0;
  rewardlog::RewardLogReader* reader = nullptr;
  std::optional<ApiResponse> failure;
};

OpenLog open_log(LogSet& logs, const Query& query) {
  OpenLog out;
  auto index = unsigned_param<size_t>(query, "log", size_t{0});
  if (!index.ok()) {
    out.failure = error(400, "bad_request", index.status().message());
    return out;
  }
  out.index = index.value();
  if (out.index >= logs.size()) {
    out.failure = error(404, "missing",
                        "no log " + std::to_string(out.index) + " (dice-dash serves " +
                            std::to_string(logs.size()) + ")");
    return out;
  }
  LogView view = logs.view(out.index);
  if (view.reader == nullptr) {
    out.failure = from_status(view.status);
    return out;
  }
  out.reader = view.reader;
  return out;
}

// The log, ?run= and ?step= of a request about one step; `failure` set when one is bad.
struct StepTarget {
  OpenLog log;
  std::string run_id;
  uint64_t step = 0;
};

StepTarget step_target(LogSet& logs, const Query& query) {
  StepTarget out;
  out.log = open_log(logs, query);
  if (out.log.failure) return out;
  auto run_id = text_param(query, "run");
  auto step = unsigned_param<uint64_t>(query, "step", std::nullopt);
  if (!run_id.ok() || !step.ok()) {
    const Status& bad = run_id.ok() ? step.status() : run_id.status();
    out.log.failure = error(400, "bad_request", bad.message());
    return out;
  }
  out.run_id = run_id.value();
  out.step = step.value();
  return out;
}

// Columnar per-step series of the step records.
json::object step_columns(const std::vector<rewardlog::OwnedRecord<schema::StepRecord>>& steps) {
  json::array step, phase, phase_name, evaluation, policy, candidates, compiled, correct;
  json::array mean_reward, correct_rate, compile_rate, dropped, loss, kl, grad_norm, clip_fraction;
  json::array seconds, group_size, groups_judged, groups_mixed, mixed_share, distinct_mean;
  json::array distinct_share, dropped_distinct_mean, internal_errors, internal_share, alert;
  for (const auto& record : steps) {
    const auto s = record.get();
    const rewardlog::StepInternalErrors faults = rewardlog::step_internal_errors(s);
    internal_errors.push_back(faults.count);
    internal_share.push_back(number(faults.share));
    alert.push_back(rewardlog::internal_error_alert(faults.share));
    const rewardlog::ExplorationCounts explored = rewardlog::exploration_counts(s);
    const rewardlog::ExplorationRates rates = rewardlog::exploration_rates(explored);
    group_size.push_back(explored.group_size);
    groups_judged.push_back(explored.groups_judged);
    groups_mixed.push_back(explored.groups_mixed);
    mixed_share.push_back(number(rates.mixed_share));
    distinct_mean.push_back(number(rates.distinct_texts_mean));
    distinct_share.push_back(number(rates.distinct_share));
    dropped_distinct_mean.push_back(number(rates.dropped_distinct_texts_mean));
    clip_fraction.push_back(number(s.getClipFraction()));
    const double n = s.getNumCandidates();
    step.push_back(s.getStep());
    phase.push_back(json::string(wire::enum_name(s.getPhase())));
    phase_name.push_back(json::string(s.getPhaseName().cStr()));
    evaluation.push_back(s.getEvaluation());
    policy.push_back(s.getPolicyVersion());
    candidates.push_back(s.getNumCandidates());
    compiled.push_back(s.getNumCompiled());
    correct.push_back(s.getNumCorrect());
    mean_reward.push_back(number(s.getMeanReward()));
    correct_rate.push_back(n > 0 ? number(s.getNumCorrect() / n) : json::value(nullptr));
    compile_rate.push_back(n > 0 ? number(s.getNumCompiled() / n) : json::value(nullptr));
    dropped.push_back(s.getNumGroupsDropped());
    loss.push_back(number(s.getLoss()));
    kl.push_back(number(s.getKlDivergence()));
    grad_norm.push_back(number(s.getGradNorm()));
    const int64_t millis = s.getFinishedUnixMillis() - s.getStartedUnixMillis();
    seconds.push_back(millis > 0 ? json::value(millis / 1000.0) : json::value(nullptr));
  }
  return json::object{{"step", step},
                      {"phase", phase},
                      {"phase_name", phase_name},
                      {"evaluation", evaluation},
                      {"policy_version", policy},
                      {"num_candidates", candidates},
                      {"num_compiled", compiled},
                      {"num_correct", correct},
                      {"mean_reward", mean_reward},
                      {"correct_rate", correct_rate},
                      {"compile_rate", compile_rate},
                      {"groups_dropped", dropped},
                      {"loss", loss},
                      {"kl", kl},
                      {"grad_norm", grad_norm},
                      {"clip_fraction", clip_fraction},
                      {"seconds", seconds},
                      {"group_size", group_size},
                      {"groups_judged", groups_judged},
                      {"groups_mixed", groups_mixed},
                      {"mixed_group_share", mixed_share},
                      {"distinct_texts_mean", distinct_mean},
                      {"distinct_text_share", distinct_share},
                      {"dropped_distinct_texts_mean", dropped_distinct_mean},
                      {"internal_errors", internal_errors},
                      {"internal_error_share", internal_share},
                      {"internal_error_alert", alert}};
}

// {name: [rate per step]} of every key any step counted: count / the step's candidates.
json::object rate_columns(const std::vector<const StepAggregate*>& aggregates,
                          std::map<std::string, uint32_t> StepAggregate::*counts,
                          const std::string& skip) {
  std::set<std::string> names;
  for (const StepAggregate* a : aggregates) {
    for (const auto& entry : a->*counts) names.insert(entry.first);
  }
  names.erase(skip);
  json::object out;
  for (const std::string& name : names) {
    json::array rates;
    for (const StepAggregate* a : aggregates) {
      const auto& map = a->*counts;
      const auto it = map.find(name);
      const uint32_t count = it == map.end() ? 0 : it->second;
      rates.push_back(a->candidates ? json::value(double(count) / a->candidates)
                                    : json::value(nullptr));
    }
    out[name] = std::move(rates);
  }
  return out;
}

// The phase label of a step as the page shows it: the phase's name (else its kind), "(eval)"
// for an eval phase.
std::string phase_label(schema::StepRecord::Reader s) {
  std::string label =
      s.getPhaseName().size() ? s.getPhaseName().cStr() : wire::enum_name(s.getPhase());
  return s.getEvaluation() ? label + " (eval)" : label;
}

// {"<phase> / level <L>": {"mean_reward": [..], "correct_rate": [..]}}: one entry per step, null
// where the step is of another phase or had no candidate of that level.
json::object level_columns(const std::vector<rewardlog::OwnedRecord<schema::StepRecord>>& steps,
                           const std::vector<const StepAggregate*>& aggregates) {
  std::set<std::string> names;
  for (size_t i = 0; i < steps.size(); ++i) {
    for (const auto& entry : aggregates[i]->levels) {
      names.insert(phase_label(steps[i].get()) + " / level " + entry.first);
    }
  }
  json::object out;
  for (const std::string& name : names) {
    json::array rewards, correct;
    for (size_t i = 0; i < steps.size(); ++i) {
      const std::string phase = phase_label(steps[i].get());
      const LevelTally* tally = nullptr;
      for (const auto& entry : aggregates[i]->levels) {
        if (phase + " / level " + entry.first == name) tally = &entry.second;
      }
      if (tally == nullptr || tally->candidates == 0) {
        rewards.push_back(nullptr);
        correct.push_back(nullptr);
        continue;
      }
      rewards.push_back(number(tally->reward_sum / tally->candidates));
      correct.push_back(number(double(tally->correct) / tally->candidates));
    }
    out[name] = json::object{{"mean_reward", rewards}, {"correct_rate", correct}};
  }
  return out;
}

json::value median(std::vector<float> values) {
  if (values.empty()) return nullptr;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2.0;
}

}  // namespace

json::array fields_not_in_log(bool has_tasks) {
  if (has_tasks) return json::array();
  const char* why =
      "this run's log has no task records (TaskRecord, column family \"tasks\"): it was "
      "written by a dice from before they were logged";
  return json::array{json::object{{"field", "task level"}, {"why", why}},
                     json::object{{"field", "PyTorch reference"}, {"why", why}}};
}

ApiResponse Api::handle(const std::string& path, const Query& query) {
  if (path == "/api/runs") return runs();
  if (path == "/api/run") return run(query);
  if (path == "/api/step") return step(query);
  if (path == "/api/candidate") return candidate(query);
  return error(404, "missing", "no API path " + path + "; try /api/runs");
}

ApiResponse Api::runs() {
  json::array logs;
  json::array runs;
  for (size_t i = 0; i < logs_->size(); ++i) {
    LogView view = logs_->view(i);
    json::object log{{"index", i}, {"path", view.path}};
    if (view.reader == nullptr) {
      log["state"] = view.status.code() == StatusCode::kNotFound ? "missing" : "unreadable";
      log["error"] = view.status.to_string();
      logs.push_back(std::move(log));
      continue;
    }
    auto records = view.reader->runs();
    if (!records.ok()) {
      log["state"] = "corrupt";
      log["error"] = records.status().to_string();
    } else {
      log["state"] = records.value().empty() ? "empty" : "ok";
      for (const auto& record : records.value()) {
        const auto r = record.get();
        json::object run{{"log", i},
                         {"run_id", r.getRunId().cStr()},
                         {"started_unix_millis", r.getStartedUnixMillis()},
                         {"host", r.getHost().cStr()},
                         {"git_revision", r.getGitRevision().cStr()},
                         {"note", r.getNote().cStr()}};
        auto steps = view.reader->steps(r.getRunId().cStr());
        if (steps.ok()) {
          run["steps"] = steps.value().size();
          if (!steps.value().empty()) run["last_step"] = steps.value().back().get().getStep();
        } else {
          run["error"] = steps.status().to_string();
        }
        runs.push_back(std::move(run));
      }
    }
    logs.push_back(std::move(log));
  }
  return ApiResponse{200, json::object{{"logs", logs}, {"runs", runs}}};
}

ApiResponse Api::run(const Query& query) {
  OpenLog log = open_log(*logs_, query);
  if (log.failure) return *log.failure;
  auto run_id = text_param(query, "run");
  if (!run_id.ok()) return error(400, "bad_request", run_id.status().message());
  auto run_record = log.reader->run(run_id.value());
  if (!run_record.ok()) return from_status(run_record.status());
  auto steps = log.reader->steps(run_id.value());
  if (!steps.ok()) return from_status(steps.status());
  auto metrics = log.reader->metrics(run_id.value());
  if (!metrics.ok()) return from_status(metrics.status());
  auto levels = task_levels(*log.reader, run_id.value());
  if (!levels.ok()) return from_status(levels.status());

  std::vector<const StepAggregate*> aggregates;
  json::array unreadable, reward_seconds, max_staleness, mean_staleness, speedup_median;
  std::vector<float> speedups;
  for (const auto& record : steps.value()) {
    const auto s = record.get();
    const StepAggregate& a = aggregates_.get(log.index, *log.reader, run_id.value(), s.getStep(),
                                             s.getPolicyVersion(), levels.value());
    // The cache may hand back its one uncached slot: copy what is needed from a damaged step
    // before the next get() reuses it.
    if (!a.error.empty()) {
      unreadable.push_back(json::object{{"step", s.getStep()}, {"error", a.error}});
    }
    reward_seconds.push_back(a.candidates ? json::value(a.reward_seconds / a.candidates)
                                          : json::value(nullptr));
    max_staleness.push_back(a.max_staleness);
    mean_staleness.push_back(a.mean_staleness);
    speedup_median.push_back(median(a.speedups));
    speedups.insert(speedups.end(), a.speedups.begin(), a.speedups.end());
    aggregates.push_back(a.error.empty() ? &a : nullptr);
  }
  // Damaged steps count as no candidates in the rates (the page lists them as unreadable).
  static const StepAggregate kNoCandidates;
  for (const StepAggregate*& a : aggregates) {
    if (a == nullptr) a = &kNoCandidates;
  }
  std::sort(speedups.begin(), speedups.end());

  json::object metric_series;
  for (const auto& record : metrics.value()) {
    const auto m = record.get();
    json::value& slot = metric_series[m.getName().cStr()];
    if (!slot.is_object()) slot = json::object{{"step", json::array()}, {"value", json::array()}};
    slot.as_object()["step"].as_array().push_back(m.getStep());
    slot.as_object()["value"].as_array().push_back(number(m.getValue()));
  }

  const auto r = run_record.value().get();
  json::array all_speedups;
  for (float s : speedups) all_speedups.push_back(s);
  return ApiResponse{
      200,
      json::object{{"log", log.index},
                   {"run_id", run_id.value()},
                   {"run", parsed(rewardlog::record_to_json(r))},
                   {"steps", step_columns(steps.value())},
                   {"stages", eval_stages(steps.value(), metrics.value())},
                   {"failure_rates", rate_columns(aggregates, &StepAggregate::failures, "none")},
                   {"finding_rates", rate_columns(aggregates, &StepAggregate::findings, "")},
                   {"reward_seconds_per_candidate", reward_seconds},
                   {"max_staleness", max_staleness},
                   {"mean_staleness", mean_staleness},
                   {"speedup_median", speedup_median},
                   {"speedups", all_speedups},
                   {"metrics", metric_series},
                   {"by_level", level_columns(steps.value(), aggregates)},
                   {"unreadable", unreadable},
                   {"internal_error_alert_above", rewardlog::kInternalErrorAlertShare},
                   {"not_in_log", fields_not_in_log(!levels.value().empty())}}};
}

ApiResponse Api::step(const Query& query) {
  StepTarget target = step_target(*logs_, query);
  if (target.log.failure) return *target.log.failure;
  OpenLog& log = target.log;
  const std::string& run_id = target.run_id;

  json::array groups;
  std::string group_key;  // task id and group of the group being filled
  rewardlog::CandidateFilter filter;
  filter.step = target.step;
  const Status scanned = log.reader->for_each_candidate(
      run_id, filter, [&](rewardlog::OwnedRecord<schema::CandidateRecord> record) {
        const auto c = record.get();
        const auto v = c.getVerdict();
        const std::string key =
            std::string(v.getTaskId().cStr()) + '\0' + std::to_string(v.getGroup());
        if (groups.empty() || key != group_key) {
          group_key = key;
          groups.push_back(json::object{{"task_id", v.getTaskId().cStr()},
                                        {"group", v.getGroup()},
                                        {"candidates", json::array()}});
        }
        json::array findings;
        for (auto f : v.getFindings()) findings.push_back(json::string(f.getCheck().cStr()));
        groups.back().as_object()["candidates"].as_array().push_back(
            json::object{{"sample", v.getSampleIndex()},
                         {"compiled", v.getCompiled()},
                         {"correct", v.getCorrect()},
                         {"reward", number(v.getReward())},
                         {"advantage", number(c.getAdvantage())},
                         {"speedup", number(v.getSpeedup())},
                         {"failure", wire::enum_name(v.getFailure())},
                         {"findings", findings},
                         {"policy_version", v.getPolicyVersion()}});
        return Status::ok_status();
      });
  json::object body{
      {"log", log.index}, {"run_id", run_id}, {"step", target.step}, {"groups", groups}};
  if (!scanned.ok()) {
    // Show the groups read before the damage, and the damage.
    body["error"] = scanned.to_string();
    body["kind"] = "corrupt";
  } else if (groups.empty()) {
    auto record = log.reader->run(run_id);
    if (!record.ok()) return from_status(record.status());
    return error(404, "missing",
                 "run " + run_id + " has no candidates at step " + std::to_string(target.step));
  }
  return ApiResponse{200, std::move(body)};
}

ApiResponse Api::candidate(const Query& query) {
  StepTarget target = step_target(*logs_, query);
  if (target.log.failure) return *target.log.failure;
  OpenLog& log = target.log;
  const std::string& run_id = target.run_id;
  auto task = text_param(query, "task");
  if (!task.ok()) return error(400, "bad_request", task.status().message());
  auto sample = unsigned_param<uint32_t>(query, "sample", std::nullopt);
  if (!sample.ok()) return error(400, "bad_request", sample.status().message());

  rewardlog::CandidateFilter filter;
  filter.step = target.step;
  filter.task_id = task.value();
  std::optional<json::value> found;
  json::object trace;
  json::array kernels;
  const Status scanned = log.reader->for_each_candidate(
      run_id, filter, [&](rewardlog::OwnedRecord<schema::CandidateRecord> record) {
        const auto v = record.get().getVerdict();
        if (v.getSampleIndex() != sample.value()) return Status::ok_status();
        found = parsed(rewardlog::record_to_json(record.get()));
        trace = trace_json(record.get());
        for (auto build : v.getBuilds()) {
          const std::string hash = build.getSourceHash().cStr();
          json::object kernel{{"source_hash", hash}};
          auto k = log.reader->kernel(hash);
          if (k.ok()) {
            kernel["record"] = parsed(rewardlog::record_to_json(k.value().get()));
          } else {
            kernel["error"] = k.status().to_string();
          }
          kernels.push_back(std::move(kernel));
        }
        return Status::ok_status();
      });
  if (!scanned.ok()) return from_status(scanned);
  if (!found) {
    return error(404, "missing",
                 "run " + run_id + " step " + std::to_string(target.step) + " task " +
                     task.value() + " has no sample " + std::to_string(sample.value()));
  }
  json::object body{{"log", log.index}, {"record", *found}, {"trace", trace}, {"kernels", kernels}};
  auto task_record = log.reader->task(run_id, task.value());
  if (task_record.ok()) {
    body["task"] = parsed(rewardlog::record_to_json(task_record.value().get()));
  } else if (task_record.status().code() == StatusCode::kNotFound) {
    body["task"] = nullptr;
    body["task_note"] = "no task record for " + task.value() +
                        " in this run (a log written before dice logged tasks)";
  } else {
    return from_status(task_record.status());
  }
  return ApiResponse{200, std::move(body)};
}

}  // namespace dice::dash
