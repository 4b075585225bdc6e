#include "tools/dice-eval/cluster_run.h"

#include <signal.h>

#include <atomic>
#include <memory>
#include <ostream>
#include <thread>

#include "rewardlog/reader.h"
#include "tools/dice-eval/log_verdicts.h"
#include "tools/dice-eval/subprocess.h"

namespace dice::eval {
namespace {

using Clock = std::chrono::steady_clock;

volatile sig_atomic_t g_interrupts = 0;

void on_interrupt(int) {
  g_interrupts = g_interrupts + 1;
}

constexpr std::chrono::milliseconds kPoll{200};
constexpr int kTailLines = 30;

void sleep_a_poll() {
  std::this_thread::sleep_for(kPoll);
}

// The status lines: the attempt's verdicts from the reward log, opened once it exists.
class StatusLines {
 public:
  StatusLines(const ClusterRunOptions& options, std::ostream& out)
      : options_(options), out_(out), started_(Clock::now()) {}

  void print() {
    Progress p = options_.progress;
    p.seconds = std::chrono::duration<double>(Clock::now() - started_).count();
    if (open()) {
      if (reader_->catch_up().ok()) {
        auto counts = run_progress(*reader_, p.run_id);
        if (counts.ok()) last_ = *counts;
      }
    }
    p.judged_answers = last_.verdicts;
    p.correct = last_.correct;
    p.rewarded = last_.rewarded;
    out_ << "dice-eval: " << progress_line(p) << std::endl;
  }

 private:
  bool open() {
    if (reader_) return true;
    rewardlog::RewardLogReaderOptions reader_options;
    reader_options.path = options_.reward_log;
    auto reader = rewardlog::RewardLogReader::open(reader_options);
    if (!reader.ok()) return false;  // the learner has not created it yet: next time
    reader_ = std::move(reader).value();
    return true;
  }

  const ClusterRunOptions& options_;
  std::ostream& out_;
  Clock::time_point started_;
  std::unique_ptr<rewardlog::RewardLogReader> reader_;
  RunProgress last_;
};

std::vector<std::string> cluster_command(const ClusterRunOptions& o, const std::string& verb) {
  return {o.cluster, verb, "--state-dir", o.state_dir};
}

std::string failure(const std::string& what, const ClusterRunOptions& o) {
  return what + "; the last lines of " + o.output_log + ":\n" +
         tail_of_file(o.output_log, kTailLines);
}

// `dice-cluster down`, no longer waited for (kAbandoned) after another signal.
RunOutcome bring_down(const ClusterRunOptions& o, RunEnd end, const std::string& why,
                      std::ostream& out) {
  const int seen = interrupts_received();
  out << "dice-eval: " << why
      << ": stopping the run's services (the learner drains its step and logs it; press "
         "Ctrl-C again to stop waiting for that)"
      << std::endl;
  auto down = Subprocess::start(cluster_command(o, "down"), o.output_log, false);
  if (!down.ok()) return {RunEnd::kFailed, down.status().message()};
  while (!down->poll()) {
    if (interrupts_received() > seen) {
      down->detach();
      return {RunEnd::kAbandoned,
              "stopped waiting: dice-cluster down goes on stopping the services in the "
              "background (dice-cluster status --state-dir " +
                  o.state_dir + ")"};
    }
    sleep_a_poll();
  }
  if (*down->poll() != 0) {
    return {RunEnd::kFailed, failure("dice-cluster down failed", o)};
  }
  return {end, why + "; the services are down and what they judged is in the reward log"};
}

}  // namespace

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &action, nullptr);
}

int interrupts_received() {
  return g_interrupts;
}

RunOutcome run_attempt(const ClusterRunOptions& options, bool start, std::ostream& out) {
  const std::string& run_id = options.progress.run_id;
  // Any signal so far ends the evaluation: one that came before this attempt starts nothing.
  if (interrupts_received() > 0) return {RunEnd::kInterrupted, "interrupted before run " + run_id};
  if (start) {
    std::vector<std::string> up = {options.cluster, "up", options.config};
    up.insert(up.end(), options.overrides.begin(), options.overrides.end());
    out << "dice-eval: starting run " << run_id << " (dice-cluster up; its output and the "
        << "learner's in " << options.output_log << ")" << std::endl;
    auto rc = run_to_end(up, options.output_log);
    if (!rc.ok()) return {RunEnd::kFailed, rc.status().message()};
    if (*rc != 0) {
      return {RunEnd::kFailed,
              failure("dice-cluster up failed (exit " + std::to_string(*rc) + ")", options)};
    }
  }
  auto wait = Subprocess::start(cluster_command(options, "wait"), options.output_log, true);
  if (!wait.ok()) return {RunEnd::kFailed, wait.status().message()};
  StatusLines status(options, out);
  const auto interval = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(options.status_interval));
  auto next_status = Clock::now() + interval;
  while (!wait->poll()) {
    if (interrupts_received() > 0) {
      return bring_down(options, RunEnd::kInterrupted, "interrupted", out);
    }
    if (Clock::now() >= options.deadline) {
      return bring_down(options, RunEnd::kTimedOut, "--timeout passed", out);
    }
    if (Clock::now() >= next_status) {
      status.print();
      next_status += interval;
    }
    sleep_a_poll();
  }
  if (interrupts_received() > 0) {  // during up, or as the learner ended
    return bring_down(options, RunEnd::kInterrupted, "interrupted", out);
  }
  status.print();
  const int waited = *wait->poll();
  auto down = run_to_end(cluster_command(options, "down"), options.output_log);
  if (waited != 0) {
    return {RunEnd::kFailed, failure("the learner of run " + run_id +
                                         " did not finish cleanly (dice-cluster wait "
                                         "exit " +
                                         std::to_string(waited) + ")",
                                     options)};
  }
  if (!down.ok() || *down != 0) {
    return {RunEnd::kFailed, failure("dice-cluster down failed after run " + run_id, options)};
  }
  return {RunEnd::kFinished, "run " + run_id + " finished"};
}

}  // namespace dice::eval
