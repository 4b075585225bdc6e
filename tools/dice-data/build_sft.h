// dice-data build-sft: PyTorch -> CUDA pairs (sft_pairs.h) judged by the reward pipeline, the
// ones correct and at least min_speedup faster than eager PyTorch on the noise-checked bound
// (keep_rule.h) written as the learner's SFT file, duplicates left out (source_norm.h), with a
// report (sft_report.h). DICE built its SFT data, CuKe, the same way: pairs kept only where the
// CUDA version is at least 2x faster than PyTorch eager.
//
// Files in out_dir:
//   verdicts.jsonl       one verdict line per judged pair, appended as each completes:
//                        reward/judge/judge.h's format (what dice-judge writes) with the pair's
//                        "pair_hash" added (sft_pairs.h)
//   sft.json             the kept pairs in the form the learner's SFT reads
//                        (learner/curriculum/sft_data.h), in input order, written whole (a
//                        temporary file renamed into place)
//   report.json, .md     counts by level and outcome class, the speedup histogram, every pair
//   report-no-gpu.json, .md   instead of the three above when pairs were left to judge and this
//                        machine cannot measure (no GPU): they were only screened
//
// Resuming: verdicts.jsonl is read first (reward/judge/judge_resume.h): the pairs it holds a
// complete line for are not judged again, a line cut by a kill is dropped (the file is cut back
// to its last complete line before appending), and a verdict of the judge's own failure
// (internalError, sandboxUnavailable) is judged again. A line whose pair_hash is not the one
// of the input's pair of that id (the input changed) is an error: its verdict is not the pair's.
// When every pair has a verdict nothing is judged, so a rerun with another threshold, noise z
// or form needs no GPU.
#pragma once

#include <functional>
#include <memory>
#include <ostream>

#include "common/exit_codes.h"
#include "common/status.h"
#include "tools/dice-data/build_sft_options.h"
#include "tools/dice-data/pair_judge.h"

namespace dice::data {

// Opens the judge; called only when some pair is left to judge.
using JudgeOpener = std::function<Result<std::unique_ptr<PairJudge>>()>;

// Exit status of build-sft: 0 the SFT file and report written; 1 the input, the verdicts file or
// an output could not be read or written, or the judge failed (the verdicts so far are kept);
// 4 (kExitNoDevice) no GPU: the pairs left to judge were only screened, the no-GPU report
// written, no SFT file.
inline constexpr int kBuildSftNoGpu = kExitNoDevice;

// Runs the command: a line saying what was written (or why not) to `out`, errors and notes to
// `err`.
int run_build_sft(const BuildSftOptions& options, const JudgeOpener& open_judge, std::ostream& out,
                  std::ostream& err);

}  // namespace dice::data
