// An evaluation's files in its output folder, and what makes two runs of dice-eval the same
// evaluation.
//
//   OUT/evaluation.json        the evaluation's id and the settings that decide its verdicts;
//                              a rerun must match them (it resumes), or it is refused
//   OUT/tasks/<kind>.json      the whole problem set as the learner's task JSON
//   OUT/attempts/a<N>/         attempt N: curriculum.yaml (one eval phase per chunk of at most
//                              chunk_size problems of one kind) and each chunk's task file;
//                              run "<id>-a<N>" of the reward log holds its verdicts
//
// An attempt asks only for the problems without complete verdicts in the log (log_verdicts.h),
// so chunks already judged are skipped and an interrupted chunk is asked again only for what it
// lacks.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "tools/dice-eval/problem.h"

namespace dice::eval {

// "<id>-a<attempt>": the reward log run of an attempt.
std::string attempt_run_id(const std::string& evaluation_id, int attempt);
// The attempt of a run id of this evaluation; nullopt for any other run.
std::optional<int> attempt_of_run(const std::string& run_id, const std::string& evaluation_id);

// What decides the verdicts: the same settings on the same output folder resume an evaluation.
struct EvalSettings {
  std::string model;          // rollout.model_path, absolute
  std::string problems;       // the --problems path, absolute
  std::string problems_hash;  // problems_hash() of the set after filters
  int problem_count = 0;
  int samples = 1;
  std::string decoding;  // "greedy" or "sample"
  int max_new_tokens = 0;
  std::string reward_mode;
  bool timing = true;
  std::string judging;                 // the judge's library policy and tolerance (evaluation.cc)
  std::string config;                  // the base config file, absolute
  std::vector<std::string> overrides;  // the user's KEY=VALUE overrides but cluster.*, in order
};

// SHA-1 over every problem's id, kind, level and texts, in order.
std::string problems_hash(const std::vector<Problem>& problems);

// "eval-" and 12 hex digits of a hash of the settings: the same settings, the same id.
std::string default_evaluation_id(const EvalSettings& settings);

// Records `id` and `settings` in OUT/evaluation.json the first time; afterwards checks them.
// InvalidArgument naming the first field that differs ("OUT/evaluation.json: samples is 1 there,
// 4 here: ..."), or Corruption for a file that is not dice-eval's.
Status check_or_record_settings(const std::string& out_dir, const std::string& id,
                                const EvalSettings& settings);

// OUT/tasks/<kind>.json for each kind of the set; returns their paths.
Result<std::vector<std::string>> write_task_files(const std::string& out_dir,
                                                  const std::vector<Problem>& problems);

struct AttemptOptions {
  int chunk_size = 100;  // problems per eval phase
  int samples = 1;
  std::string decoding = "greedy";
  bool timing = true;
};

struct Attempt {
  int number = 0;
  std::string run_id;      // "<id>-a<N>"
  std::string dir;         // OUT/attempts/a<N>
  std::string curriculum;  // its curriculum.yaml
  std::vector<std::string> phases;
  int problems = 0;  // asked in this attempt
};

// The curriculum of an attempt: eval phases `phases` with task file `<phase>.json` each.
std::string curriculum_yaml(const std::string& evaluation_id, int attempt,
                            const std::vector<std::pair<std::string, TaskKind>>& phases,
                            const AttemptOptions& options);

// Writes attempt `number`'s folder for the problems `ask` (in set order): chunk task files and
// the curriculum. IOError naming the path.
Result<Attempt> write_attempt(const std::string& out_dir, const std::string& evaluation_id,
                              int number, const std::vector<const Problem*>& ask,
                              const AttemptOptions& options);

}  // namespace dice::eval
