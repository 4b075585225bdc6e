#include "tools/dice-eval/evaluation.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>

#include "cluster/cluster_state.h"
#include "cluster/process.h"
#include "common/durable_file.h"
#include "options/dice_config.h"
#include "tools/dice-eval/cluster_run.h"
#include "tools/dice-eval/environment.h"
#include "tools/dice-eval/eval_table.h"
#include "tools/dice-eval/log_summary.h"
#include "tools/dice-eval/log_verdicts.h"
#include "tools/dice-eval/plan.h"
#include "tools/dice-eval/table_writers.h"

namespace dice::eval {
namespace fs = std::filesystem;
namespace {

// KernelBench's evaluation (REFERENCE.md section 4), as overrides a user's KEY=VALUE may replace.
constexpr int kCorrectnessTrials = 5;
constexpr int kTimingTrials = 100;
constexpr int kTimingWarmups = 3;
// DICE's evaluation decoding (REFERENCE.md section 1): the phase's `decoding: greedy` gives
// temperature 0 and low_confidence_static (learner/curriculum/phase_plan.cc: phase_sampling); these
// the rest.
constexpr int kGreedyBlockSize = 4;
constexpr int kGreedyDenoisingSteps = 4;
// One judging pass gives both of the table's columns (eval_table.h): the verdicts are judged
// with vendor libraries allowed at DICE's tolerance (its paper's and KernelBench's semantics),
// and "own kernels only" counts an answer with a library-calls finding as not correct. That is
// the verdict own_kernels_only would have given: the two policies differ only in the
// vendor-library rule, whose evidence (the module's imports, the kernels forward launched) the
// judge reads and records under both; an answer the rule refuses cannot be correct, and one it
// does not touch runs the same checks either way. A second pass would only double the GPU time
// and add the noise of a second sampling of timings.
constexpr char kLibraries[] = "allowed";
constexpr double kDiceTolerance = 0.01;  // atol = rtol for every output dtype

std::string format_tolerance() {
  char text[32];
  std::snprintf(text, sizeof text, "%g", kDiceTolerance);
  return text;
}

// A failure with its exit status, for the steps below.
struct Failure {
  int code = kExitOk;
  std::string message;
};

int exit_code_of(const Status& status) {
  return status.code() == StatusCode::kInvalidArgument || status.code() == StatusCode::kNotFound
             ? kExitBadInput
             : kExitFailure;
}

std::string absolute(const std::string& path) {
  return fs::absolute(path).lexically_normal().string();
}

// Everything the evaluation needs once its inputs are checked.
struct Context {
  EvalRequest request;
  ProblemSet set;
  Machine machine;
  DiceConfig base;  // the base config with the user's overrides
  std::string config, model, out, reward_log, cluster, reward_mode, id;
  int block_size = kGreedyBlockSize;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

std::string decoding_text(const Context& c) {
  const auto& s = c.base.rollout.sampling;
  if (c.request.decoding == "greedy") {
    return "greedy (temperature 0, low_confidence_static, block " +
           std::to_string(kGreedyBlockSize) + ", " + std::to_string(kGreedyDenoisingSteps) +
           " steps, " + std::to_string(c.request.max_new_tokens) + " new tokens)";
  }
  char text[200];
  std::snprintf(text, sizeof text,
                "sample (temperature %g, top_p %g, top_k %d, block %d, %d steps, %d new tokens)",
                s.temperature, s.top_p, s.top_k, s.block_size, s.denoising_steps,
                c.request.max_new_tokens);
  return text;
}

// Steps 1 and 2: the problem set, the model, the machine, the config and the reward mode.
Failure check_inputs(Context* c, std::ostream& out) {
  const EvalRequest& r = c->request;
  auto set = read_problem_set(r.problems, r.problem_options);
  if (!set.ok()) return {exit_code_of(set.status()), set.status().message()};
  c->set = std::move(set).value();
  c->model = absolute(r.model);
  std::error_code ec;
  if (!fs::is_directory(c->model, ec))
    return {kExitBadInput, "--model " + r.model + ": no such folder"};
  if (!fs::is_regular_file(fs::path(c->model) / "config.json", ec)) {
    return {kExitBadInput, "--model " + r.model +
                               ": no config.json in it (a checkpoint in Hugging Face layout: "
                               "config.json, tokenizer.json, *.safetensors)"};
  }
  c->machine = probe_machine();
  c->config = absolute(r.config.empty() ? default_config(c->machine) : r.config);
  std::vector<std::string> overrides = r.overrides;
  overrides.push_back("rollout.model_path=" + c->model);
  auto base = load_dice_config(c->config, overrides);
  if (!base.ok()) return {kExitBadInput, "config: " + base.status().message()};
  c->base = std::move(base).value();
  if (c->base.cluster.backend == ClusterBackend::kSlurm) {
    return {kExitBadInput, c->config +
                               ": cluster.backend slurm: dice-eval follows a run with "
                               "dice-cluster wait, which follows local and ssh runs"};
  }
  c->reward_mode =
      !r.reward_mode.empty()
          ? r.reward_mode
          : default_reward_mode(c->machine, c->base.reward.nvcc_path, c->base.reward.python_path);
  if (c->machine.gpu) {
    out << "dice-eval: GPU found: " << c->machine.gpus << std::endl;
  } else {
    out << "dice-eval: NO GPU found (nvidia-smi lists none). "
        << (c->reward_mode == "full" ? "Reward mode full needs one"
                                     : reward_mode_warning(c->reward_mode))
        << "." << std::endl;
  }
  if (c->reward_mode == "full" && !c->machine.gpu) {
    return {kExitFailure,
            "reward mode full compiles, runs and times every answer on a GPU, and this machine "
            "has none: nothing was evaluated. Run on a GPU machine, or pass --reward-mode "
            "compile_only or extraction_only (then no number means a correct kernel)"};
  }
  if (c->base.rollout.device == RolloutDevice::kCuda && !c->machine.gpu) {
    return {kExitFailure, c->config +
                              ": rollout.device cuda samples on a GPU, and this machine has none: "
                              "use a config whose rollout.device is cpu (configs/toy.yaml, for "
                              "tiny models only) or run on a GPU machine"};
  }
  c->block_size = r.decoding == "greedy" ? kGreedyBlockSize : c->base.rollout.sampling.block_size;
  const long long needed = r.max_new_tokens + 2LL * c->block_size + 1;
  if (needed > c->base.rollout.max_sequence_length) {
    return {kExitBadInput, "--max-new-tokens " + std::to_string(r.max_new_tokens) +
                               " cannot fit: rollout.max_sequence_length is " +
                               std::to_string(c->base.rollout.max_sequence_length) +
                               " (prompt + new tokens + 2 blocks): lower --max-new-tokens or raise "
                               "rollout.max_sequence_length=N"};
  }
  return {};
}

// Step 3: the output folder, the evaluation's id and settings, the lock, the task files.
Failure prepare_output(Context* c, int* lock_fd) {
  const EvalRequest& r = c->request;
  c->out = absolute(r.out);
  EvalSettings settings;
  settings.model = c->model;
  settings.problems = absolute(r.problems);
  settings.problems_hash = problems_hash(c->set.problems);
  settings.problem_count = static_cast<int>(c->set.problems.size());
  settings.samples = r.samples;
  settings.decoding = r.decoding;
  settings.max_new_tokens = r.max_new_tokens;
  settings.reward_mode = c->reward_mode;
  settings.timing = r.timing;
  settings.judging =
      std::string("libraries ") + kLibraries + ", atol = rtol = " + format_tolerance();
  settings.config = c->config;
  for (const std::string& o : r.overrides) {
    // Placement and ports decide where the services run, not what they answer or judge.
    if (o.rfind("cluster.", 0) != 0) settings.overrides.push_back(o);
  }
  c->id = r.id.empty() ? default_evaluation_id(settings) : r.id;
  Status recorded = check_or_record_settings(c->out, c->id, settings);
  if (!recorded.ok()) return {exit_code_of(recorded), recorded.message()};
  const std::string lock = c->out + "/.lock";
  *lock_fd = open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (*lock_fd < 0 || flock(*lock_fd, LOCK_EX | LOCK_NB) != 0) {
    return {kExitFailure, lock + ": another dice-eval is working on this output folder"};
  }
  auto written = write_task_files(c->out, c->set.problems);
  if (!written.ok()) return {kExitFailure, written.status().message()};
  c->reward_log = r.reward_log.empty() ? c->out + "/reward_log" : absolute(r.reward_log);
  Status free_id = check_table_run_id(c->reward_log, c->id);
  if (!free_id.ok()) return {exit_code_of(free_id), free_id.message()};
  c->cluster = r.cluster.empty() ? find_cluster_executable() : absolute(r.cluster);
  if (c->cluster.empty() || !is_executable(c->cluster)) {
    return {kExitBadInput,
            "no dice-cluster executable " +
                (c->cluster.empty() ? std::string("beside dice-eval or in PATH") : c->cluster) +
                ": build it, or pass --cluster FILE"};
  }
  std::error_code ec;
  fs::create_directories(c->out + "/logs", ec);
  if (ec) return {kExitFailure, c->out + "/logs: cannot create the folder: " + ec.message()};
  if (r.timeout > 0) {
    c->deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(r.timeout));
  }
  return {};
}

// The dice-cluster state dir of one attempt run: a folder each, so that each run's service logs
// are its own (the supervisor appends to a state dir's logs).
std::string state_dir_of(const Context& c, const std::string& run_id) {
  return c.out + "/cluster/" + run_id;
}

// dice-eval's overrides for attempt `run_id`, then the user's.
std::vector<std::string> attempt_overrides(const Context& c, const Attempt& attempt) {
  const EvalRequest& r = c.request;
  std::vector<std::string> o = {
      "run.id=" + attempt.run_id,
      "run.reward_log_path=" + c.reward_log,
      "curriculum_file=" + attempt.curriculum,
      "rollout.model_path=" + c.model,
      "learner.mode=rl",
      "learner.update_policy=false",
      "learner.phases=[]",
      "learner.checkpoint.dir=" + c.out + "/checkpoints",
      "reward.mode=" + c.reward_mode,
      "cluster.local.state_dir=" + state_dir_of(c, attempt.run_id),
      "reward.correctness_trials=" + std::to_string(kCorrectnessTrials),
      std::string("reward.libraries=") + kLibraries,
      "reward.tolerance.fp32=" + format_tolerance(),
      "reward.tolerance.fp16=" + format_tolerance(),
      "reward.tolerance.bf16=" + format_tolerance(),
      "rollout.sampling.max_new_tokens=" + std::to_string(r.max_new_tokens),
  };
  if (r.decoding == "greedy") {
    o.push_back("rollout.sampling.block_size=" + std::to_string(kGreedyBlockSize));
    o.push_back("rollout.sampling.denoising_steps=" + std::to_string(kGreedyDenoisingSteps));
  }
  if (r.timing && c.reward_mode == "full") {
    o.push_back("reward.timing.enabled=true");
    o.push_back("reward.timing.trials=" + std::to_string(kTimingTrials));
    o.push_back("reward.timing.warmups=" + std::to_string(kTimingWarmups));
  }
  o.insert(o.end(), r.overrides.begin(), r.overrides.end());
  return o;
}

// Why the learner skipped groups, from an attempt's log lines (msg="group skipped" ...
// why="..."), with the first error a worker reported: "rollout failed x2 (first error: ...)".
std::string skip_reasons(const std::string& log_path, const std::string& run_id) {
  std::ifstream in(log_path);
  std::map<std::string, int> reasons;
  std::string first_error, line;
  auto quoted = [&line](const std::string& key) {
    const std::size_t at = line.find(key + "=\"");
    if (at == std::string::npos) return std::string();
    const std::size_t start = at + key.size() + 2;
    return line.substr(start, line.find('"', start) - start);
  };
  while (std::getline(in, line)) {
    if (line.find(" run=" + run_id + " ") == std::string::npos) continue;
    if (line.find("msg=\"group skipped\"") != std::string::npos) ++reasons[quoted("why")];
    if (first_error.empty()) first_error = quoted("error");
  }
  std::string out;
  for (const auto& [why, count] : reasons) {
    out += (out.empty() ? "" : ", ") + why + " x" + std::to_string(count);
  }
  if (!first_error.empty())
    out += (out.empty() ? "" : " ") + ("(first error: " + first_error + ")");
  return out;
}

ClusterRunOptions run_options(const Context& c, const std::string& run_id, int asked) {
  ClusterRunOptions o;
  o.cluster = c.cluster;
  o.config = c.config;
  o.state_dir = state_dir_of(c, run_id);
  o.reward_log = c.reward_log;
  o.output_log = c.out + "/logs/" + run_id + ".log";
  o.status_interval = c.request.status_interval;
  o.deadline = c.deadline;
  o.progress.run_id = run_id;
  o.progress.total_problems = static_cast<int>(c.set.problems.size());
  o.progress.samples = c.request.samples;
  o.progress.asked_answers = asked * c.request.samples;
  o.progress.done_before = static_cast<int>(c.set.problems.size()) - asked;
  o.progress.reward_mode = c.reward_mode;
  return o;
}

// A run of this evaluation that a killed dice-eval left up (in OUT/cluster/<run>/): followed to
// its end. Returns its attempt number (0 when none was up).
Result<int> follow_live_run(const Context& c, std::ostream& out) {
  std::vector<std::string> dirs;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(c.out + "/cluster", ec)) {
    if (entry.is_directory(ec)) dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  std::optional<cluster::ClusterState> state;
  std::string dir;
  for (const std::string& candidate : dirs) {
    auto read = cluster::read_state_file(candidate);
    if (!read.ok()) continue;
    bool alive = cluster::process_alive(read->supervisor_pid, read->supervisor_start_ticks);
    for (const auto& s : read->services)
      alive = alive || cluster::process_alive(s.pid, s.start_ticks);
    if (alive) {
      state = std::move(read).value();
      dir = candidate;
      break;
    }
  }
  if (!state) return 0;
  const auto attempt = attempt_of_run(state->run_id, c.id);
  if (!attempt || dir != state_dir_of(c, state->run_id)) {
    return Status::unavailable("run '" + state->run_id + "', not one of evaluation " + c.id +
                               ", is up in " + dir +
                               ": stop it with dice-cluster down --state-dir " + dir);
  }
  // The attempt asked for the problems missing before it: all but those complete elsewhere.
  DICE_ASSIGN_OR_RETURN(LoggedEvaluation logged,
                        read_evaluation_at(c.reward_log, c.id, c.request.samples));
  int asked = static_cast<int>(c.set.problems.size());
  for (const std::string& task : logged.complete)
    asked -= logged.answered_in[task] != state->run_id;
  out << "dice-eval: run " << state->run_id
      << " of this evaluation is still up (left by an interrupted dice-eval): following it"
      << std::endl;
  RunOutcome outcome = run_attempt(run_options(c, state->run_id, asked), false, out);
  if (outcome.end == RunEnd::kInterrupted || outcome.end == RunEnd::kAbandoned ||
      outcome.end == RunEnd::kTimedOut) {
    return Status::aborted(outcome.message);
  }
  if (outcome.end == RunEnd::kFailed) {
    out << "dice-eval: run " << state->run_id
        << " did not end cleanly; its problems without verdicts are asked again: "
        << outcome.message << std::endl;
  }
  return *attempt;
}

// Step 5: the table from the reward log, printed and written to OUT and into the log.
Failure write_table(const Context& c, std::ostream& out) {
  const EvalRequest& r = c.request;
  auto logged = read_evaluation_at(c.reward_log, c.id, r.samples);
  if (!logged.ok())
    return {kExitFailure, "reward log " + c.reward_log + ": " + logged.status().message()};
  const EvalTable table = tally_table(c.set.problems, logged->answers, logged->own_kernels_answers,
                                      {r.samples, r.pass_k, r.noise_z});
  TableMeta meta;
  meta.evaluation_id = c.id;
  meta.model = c.model;
  meta.problem_set = absolute(r.problems);
  meta.problem_form = c.set.form;
  meta.reward_mode = c.reward_mode;
  for (const std::string& mode : logged->reward_modes) {
    if (!mode.empty() && mode != "full")
      meta.reward_mode = mode;  // never claim more than a run did
  }
  meta.decoding = decoding_text(c);
  meta.samples = r.samples;
  meta.pass_k = r.pass_k;
  meta.noise_z = r.noise_z;
  meta.tolerance = kDiceTolerance;
  meta.timing = r.timing && meta.reward_mode == "full";
  meta.runs = logged->runs;
  for (std::uint64_t sum : logged->weights_checksums) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
    meta.weights_checksums.push_back(hex);
  }
  meta.created_utc = cluster::format_utc(cluster::wall_seconds());
  const std::string markdown = table_markdown(meta, table);
  for (const auto& [name, text] : {std::pair<const char*, std::string>{"table.md", markdown},
                                   {"table.json", table_json(meta, table)},
                                   {"table.csv", table_csv(meta, table)}}) {
    Status written = write_file_atomically(c.out + "/" + name, text);
    if (!written.ok()) return {kExitFailure, written.message()};
  }
  out << "\n" << markdown << std::endl;
  Status logged_table = write_table_to_log(c.reward_log, meta, table, print_dice_config(c.base));
  if (!logged_table.ok()) {
    return {kExitFailure, "the table is in " + c.out + "/table.{md,json,csv}, but the reward log " +
                              c.reward_log + " did not take it: " + logged_table.message()};
  }
  out << "dice-eval: wrote " << c.out << "/table.md, table.json and table.csv, and run " << c.id
      << " of the reward log " << c.reward_log << " (dice-log metrics " << c.reward_log << " "
      << c.id << ")" << std::endl;
  return {};
}

// Step 4: attempts until every problem has its verdicts (or the retries are spent).
Failure run_attempts(const Context& c, std::ostream& out) {
  const EvalRequest& r = c.request;
  auto live = follow_live_run(c, out);
  if (!live.ok())
    return {kExitFailure, live.status().message() + "; rerun the same command to resume"};
  int last_attempt = *live;
  int retries_left = r.retries;
  bool finished_here = false;  // an attempt of this invocation ended cleanly
  for (;;) {
    auto logged = read_evaluation_at(c.reward_log, c.id, r.samples);
    if (!logged.ok())
      return {kExitFailure, "reward log " + c.reward_log + ": " + logged.status().message()};
    std::vector<const Problem*> ask;
    for (const Problem& p : c.set.problems) {
      if (logged->complete.count(p.id) == 0) ask.push_back(&p);
    }
    if (ask.empty()) {
      if (!finished_here && *live == 0) {  // nothing ran in this invocation
        out << "dice-eval: every problem has its verdicts in the reward log ("
            << logged->runs.size() << " run(s)): nothing left to run" << std::endl;
      }
      return {};
    }
    if (finished_here && retries_left-- <= 0) {
      const std::string run_id = attempt_run_id(c.id, last_attempt);
      const std::string why = skip_reasons(c.out + "/logs/" + run_id + ".log", run_id);
      out << "dice-eval: WARNING: " << ask.size()
          << " problem(s) still lack a verdict for some answer after " << r.retries + 1
          << " attempt(s); they count as not correct, and a rerun asks for them again. The "
          << "learner skipped groups: " << (why.empty() ? "see " + c.out + "/logs" : why)
          << std::endl;
      return {};
    }
    const int number = std::max(last_attempt, logged->last_attempt) + 1;
    auto attempt =
        write_attempt(c.out, c.id, number, ask,
                      {r.chunk_size, r.samples, r.decoding, r.timing && c.reward_mode == "full"});
    if (!attempt.ok()) return {kExitFailure, attempt.status().message()};
    ClusterRunOptions options = run_options(c, attempt->run_id, attempt->problems);
    options.overrides = attempt_overrides(c, *attempt);
    auto checked = load_dice_config(c.config, options.overrides);
    if (!checked.ok()) return {kExitBadInput, "config: " + checked.status().message()};
    out << "dice-eval: attempt " << number << ": " << ask.size() << " of " << c.set.problems.size()
        << " problems in " << attempt->phases.size() << " eval phase(s) (" << attempt->curriculum
        << ")" << std::endl;
    RunOutcome outcome = run_attempt(options, true, out);
    last_attempt = number;
    if (outcome.end != RunEnd::kFinished) {
      return {kExitFailure, outcome.message + "\nrerun the same command to resume"};
    }
    finished_here = true;
  }
}

}  // namespace

int run_evaluation(const EvalRequest& request, std::ostream& out, std::ostream& err) {
  Context c;
  c.request = request;
  auto fail = [&err](const Failure& f) {
    err << "dice-eval: " << f.message << std::endl;
    return f.code;
  };
  if (Failure f = check_inputs(&c, out); f.code != kExitOk) return fail(f);
  int lock_fd = -1;
  Failure prepared = prepare_output(&c, &lock_fd);
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) close(fd);
    }
  } unlock{lock_fd};
  if (prepared.code != kExitOk) return fail(prepared);
  out << "dice-eval: evaluation " << c.id << ": " << c.set.problems.size() << " problems ("
      << c.set.form << ", " << c.set.path << "), " << decoding_text(c) << ", " << request.samples
      << " answer(s) each, reward mode " << c.reward_mode << "; output in " << c.out << std::endl;
  install_interrupt_handlers();
  if (Failure f = run_attempts(c, out); f.code != kExitOk) return fail(f);
  if (Failure f = write_table(c, out); f.code != kExitOk) return fail(f);
  return kExitOk;
}

}  // namespace dice::eval
