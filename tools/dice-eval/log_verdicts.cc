#include "tools/dice-eval/log_verdicts.h"

#include <algorithm>

#include "options/reward_options.h"

namespace dice::eval {
namespace {

int judged_count(const std::vector<AnswerVerdict>& answers) {
  return static_cast<int>(std::count_if(answers.begin(), answers.end(),
                                        [](const AnswerVerdict& a) { return a.judged; }));
}

}  // namespace

AnswerVerdict own_kernels_answer(schema::Verdict::Reader verdict) {
  AnswerVerdict answer = answer_of(verdict);
  for (const auto& finding : verdict.getFindings()) {
    if (finding.getCheck() == kLibraryCallsFinding) answer.correct = answer.rewarded = false;
  }
  return answer;
}

Result<LoggedEvaluation> read_evaluation(rewardlog::RewardLogReader& log,
                                         const std::string& evaluation_id, int samples) {
  LoggedEvaluation out;
  DICE_ASSIGN_OR_RETURN(auto runs, log.runs());
  std::vector<std::pair<int, std::string>> attempts;
  for (const auto& run : runs) {
    const std::string id = run.get().getRunId().cStr();
    if (auto attempt = attempt_of_run(id, evaluation_id)) attempts.emplace_back(*attempt, id);
  }
  std::sort(attempts.begin(), attempts.end());
  const std::size_t n = static_cast<std::size_t>(std::max(samples, 1));
  for (const auto& [attempt, run_id] : attempts) {
    out.runs.push_back(run_id);
    out.last_attempt = attempt;
    DICE_ASSIGN_OR_RETURN(auto steps, log.steps(run_id));
    for (const auto& step : steps) out.reward_modes.insert(step.get().getRewardMode().cStr());
    std::map<std::string, std::vector<AnswerVerdict>> found;      // this attempt's answers
    std::map<std::string, std::vector<AnswerVerdict>> found_own;  // and as own_kernels_answer
    DICE_RETURN_IF_ERROR(log.for_each_candidate(
        run_id, {}, [&](rewardlog::OwnedRecord<schema::CandidateRecord> record) {
          auto verdict = record.get().getVerdict();
          const std::size_t sample = verdict.getSampleIndex();
          if (sample >= n) return Status::ok_status();
          auto& answers = found[verdict.getTaskId().cStr()];
          auto& own = found_own[verdict.getTaskId().cStr()];
          answers.resize(n);
          own.resize(n);
          if (!answers[sample].judged) {
            answers[sample] = answer_of(verdict);
            own[sample] = own_kernels_answer(verdict);
          }
          out.weights_checksums.insert(record.get().getWeightsChecksum());
          return Status::ok_status();
        }));
    for (auto& [task, answers] : found) {
      if (out.complete.count(task) > 0) continue;  // an earlier attempt completed it
      const int judged = judged_count(answers);
      auto held = out.answers.find(task);
      if (held != out.answers.end() && judged_count(held->second) >= judged) continue;
      out.answers[task] = answers;
      out.own_kernels_answers[task] = found_own[task];
      out.answered_in[task] = run_id;
      if (judged == static_cast<int>(n)) out.complete.insert(task);
    }
  }
  return out;
}

Result<LoggedEvaluation> read_evaluation_at(const std::string& path,
                                            const std::string& evaluation_id, int samples) {
  rewardlog::RewardLogReaderOptions options;
  options.path = path;
  auto log = rewardlog::RewardLogReader::open(options);
  if (log.status().code() == StatusCode::kNotFound) return LoggedEvaluation{};
  if (!log.ok()) return log.status();
  return read_evaluation(**log, evaluation_id, samples);
}

Result<RunProgress> run_progress(rewardlog::RewardLogReader& log, const std::string& run_id) {
  RunProgress progress;
  DICE_RETURN_IF_ERROR(log.for_each_candidate(
      run_id, {}, [&](rewardlog::OwnedRecord<schema::CandidateRecord> record) {
        auto verdict = record.get().getVerdict();
        ++progress.verdicts;
        progress.correct += verdict.getCorrect();
        progress.rewarded += verdict.getReward() > 0;
        return Status::ok_status();
      }));
  return progress;
}

}  // namespace dice::eval
