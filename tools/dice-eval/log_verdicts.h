// What the reward log holds of an evaluation: the verdicts of its attempt runs, read back as the
// table's answers. An evaluation <id> runs as attempts, each a learner run "<id>-a<N>" (N = 1,
// 2, ...) whose eval phases ask for the problems that had no complete verdicts before it
// (plan.h); the log is the only memory of what is done, so an interrupted evaluation resumes by
// reading it (also as a secondary, while an attempt writes).
//
// A problem's answers come from the first attempt that has a verdict for each of its samples
// (sample indexes 0 .. samples - 1); a problem no attempt completed keeps the attempt with the
// most of them (the rest are missing).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "rewardlog/reader.h"
#include "tasks/answer_verdict.h"
#include "tools/dice-eval/plan.h"

namespace dice::eval {

struct LoggedEvaluation {
  std::vector<std::string> runs;  // the attempt runs in the log, by attempt
  int last_attempt = 0;           // 0 when none
  // task id -> its answers by sample index (unjudged entries where a verdict is missing)
  std::map<std::string, std::vector<AnswerVerdict>> answers;
  // the same answers with each one whose verdict has a library-calls finding (it called a vendor
  // library: kLibraryCallsFinding, options/reward_options.h) not correct and not rewarded: the
  // table's "own kernels only" cells
  std::map<std::string, std::vector<AnswerVerdict>> own_kernels_answers;
  std::map<std::string, std::string> answered_in;  // task id -> the run its answers come from
  std::set<std::string> complete;                  // tasks with a verdict for every sample
  std::set<std::string> reward_modes;              // of the attempts' StepRecords
  std::set<std::uint64_t> weights_checksums;       // of the weights that sampled any answer
};

// The answer as "own kernels only" judges it: not correct and not rewarded when its verdict has a
// library-calls finding, else as judged.
AnswerVerdict own_kernels_answer(schema::Verdict::Reader verdict);

// Reads every attempt of `evaluation_id` from an open log (catch_up() first to see a writer's
// latest). Corruption/IOError from the reader.
Result<LoggedEvaluation> read_evaluation(rewardlog::RewardLogReader& log,
                                         const std::string& evaluation_id, int samples);

// The same from the log at `path`, opened as a secondary for the call; an empty
// LoggedEvaluation when there is no log there yet.
Result<LoggedEvaluation> read_evaluation_at(const std::string& path,
                                            const std::string& evaluation_id, int samples);

// How far one run is: its verdicts, how many were correct, how many got a reward > 0.
struct RunProgress {
  int verdicts = 0;
  int correct = 0;
  int rewarded = 0;
};
Result<RunProgress> run_progress(rewardlog::RewardLogReader& log, const std::string& run_id);

}  // namespace dice::eval
