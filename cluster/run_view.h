// The human view of a run that `dice-cluster wait` shows on a terminal: it reads the learner's
// log lines (logfmt, common/log.h) one at a time and keeps what a person following the run wants.
// A toy run (tests/cluster/fixtures/toy_learner.log) reads:
//
//   19:36:06 WARN no CUDA device visible: the policy update runs on the CPU (...) model=...
//   run capture-1: 3 phases, 3 steps; policy update: TraceRL; reward extraction_only
//   SFT  step 16/16 (100%)  epoch 4  loss 2.94188  1336 tok/s  ETA 0s  done in 21s
//   eval-sft  step 1/1  reward 0.000  correct 0.000  9.62 candidates/s  run ETA 0s
//   evaluation of eval-sft (policy v1, reward extraction_only)
//     level   exec  fast_1  fast_2  tasks
//     1      0.000   0.000   0.000      2
//     all    0.000   0.000   0.000      2
//   phase rl
//      step    k/N  reward  correct  cands  mixed      loss        kl   secs
//         1    1/2   0.000    0.000      8    0/2         -         -    0.5
//         2    2/2   0.000    0.000      8    0/2         -         -    0.7
//   learner done: 3 steps
//
// Each phase has a live line, redrawn in place as its steps come (SFT: every step; RL and
// evaluation phases: every step line) and shown below the permanent lines. When the phase ends,
// an SFT or evaluation phase's live line stays as its final state (the SFT and eval-sft lines
// above); an RL phase's goes, its rows holding the same. Warnings, errors, restarts of the
// learner and lines that are not logfmt (a library's message, a crash) are printed as they come.
// Everything else the learner logs (each SFT step, weights pushed, checkpoints, workers joining
// and leaving, debug lines) stays in its log, where `dice-cluster logs` reads it.
//
// Pure: no clock, no terminal; cluster/live_line_writer.h draws the updates.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cluster/logfmt_reader.h"

namespace dice::cluster {

// What one log line changes on the screen.
struct ViewUpdate {
  std::vector<std::string> lines;   // permanent lines, in order, printed above the live line
  std::optional<std::string> live;  // the live line's new text; "" removes it; nullopt: unchanged
};

class RunView {
 public:
  // The update for the learner's next log line (a trailing newline is ignored).
  ViewUpdate read(const std::string& log_line);

  // The run ended (or following it did): the live line becomes a permanent line.
  ViewUpdate finish();

 private:
  // The live line goes: kept as a permanent line when `keep`, else dropped.
  void end_live(bool keep, ViewUpdate* update);
  // Makes `text` the live line of `phase`; another phase's live line ends first, and the new one
  // is kept at its end when `keep`.
  void set_live(const std::string& phase, const std::string& text, bool keep, ViewUpdate* update);
  // A line that is not logfmt: the supervisor's, a library's, a crash's.
  void read_other(const std::string& text, ViewUpdate* update);
  void read_sft_start(const LogfmtLine& line, ViewUpdate* update);
  void read_sft_step(const LogfmtLine& line, ViewUpdate* update);
  void read_step(const LogfmtLine& line, ViewUpdate* update);
  void read_evaluation(const LogfmtLine& line, ViewUpdate* update);

  std::string live_;        // the live line's text; "" when there is none
  std::string live_phase_;  // the phase it belongs to
  bool keep_live_ = true;   // whether it stays when its phase ends (SFT and eval phases)
  std::string rows_phase_;  // the RL phase whose step-table header was printed last
};

}  // namespace dice::cluster
