// PairJudgeTestDouble: a PairJudge (tools/dice-data/pair_judge.h) that answers from a table of
// verdicts set by the test, in the real format (reward/judge/judge.h's verdict_json over a Cap'n
// Proto Verdict, as the pipeline's judge writes it), and records what it was asked to judge. It
// can stop with an error after some verdicts (a judge that died) and can play a machine without
// a GPU (a screen). For the tests of dice-data build-sft.
#pragma once

#include <capnp/message.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "reward/judge/judge.h"
#include "tools/dice-data/pair_judge.h"

namespace dice::data::testing {

// What the judge finds for one pair.
struct VerdictSpec {
  bool compiled = true;
  bool correct = true;
  schema::FailureClass failure = schema::FailureClass::NONE;
  bool fatal_finding = false;
  bool screened = false;  // a reward-mode finding: only extracted and checked (no GPU)
  // Timings (used when correct and trials > 0): means and stds in ms, timed trials.
  double kernel_ms = 0, kernel_std = 0, reference_ms = 0, reference_std = 0;
  int trials = 0;
};

// A correct kernel timed at `kernel_ms` (sd `kernel_std`) against the reference's `reference_ms`
// (sd `reference_std`) over `trials` timed runs.
inline VerdictSpec timed(double kernel_ms, double kernel_std, double reference_ms,
                         double reference_std, int trials = 99) {
  VerdictSpec v;
  v.kernel_ms = kernel_ms;
  v.kernel_std = kernel_std;
  v.reference_ms = reference_ms;
  v.reference_std = reference_std;
  v.trials = trials;
  return v;
}

// A candidate that failed with `failure` (compiled or not).
inline VerdictSpec failed(schema::FailureClass failure, bool compiled) {
  VerdictSpec v;
  v.compiled = compiled;
  v.correct = false;
  v.failure = failure;
  return v;
}

// The verdict line of `spec` for the pair `id`, as the pipeline's judge emits it.
inline std::string verdict_line(const std::string& id, const VerdictSpec& spec) {
  capnp::MallocMessageBuilder message;
  auto verdict = message.initRoot<schema::Verdict>();
  verdict.setCompiled(spec.compiled);
  verdict.setCorrect(spec.correct);
  verdict.setFailure(spec.failure);
  verdict.setReward(spec.correct && !spec.fatal_finding ? 1.0f : spec.screened ? 1.0f : 0.0f);
  const bool has_finding = spec.fatal_finding || spec.screened;
  if (has_finding) {
    auto finding = verdict.initFindings(1)[0];
    finding.setCheck(spec.screened ? "reward-mode" : "timed-output-wrong");
    finding.setFatal(spec.fatal_finding);
  }
  const bool timed = spec.correct && spec.trials > 0;
  if (timed) {
    auto t = verdict.getTimings();
    t.setKernelMsMean(static_cast<float>(spec.kernel_ms));
    t.setKernelMsStd(static_cast<float>(spec.kernel_std));
    t.setReferenceMsMean(static_cast<float>(spec.reference_ms));
    t.setReferenceMsStd(static_cast<float>(spec.reference_std));
    t.setTimingTrials(static_cast<unsigned>(spec.trials));
    verdict.setSpeedup(static_cast<float>(spec.reference_ms / spec.kernel_ms));
  }
  JudgeItem item;
  item.id = id;
  return verdict_json(item, verdict.asReader(), timed);
}

class PairJudgeTestDouble : public PairJudge {
 public:
  // A judge that measures (a GPU machine).
  PairJudgeTestDouble() = default;
  // A judge that only screens: `no_gpu` says why.
  static PairJudgeTestDouble without_gpu(std::string no_gpu) {
    PairJudgeTestDouble judge;
    judge.capability_ = {false, "extraction_only", std::move(no_gpu)};
    return judge;
  }

  void set(const std::string& id, VerdictSpec spec) { specs_[id] = spec; }
  // After `n` verdicts, stop with an error (a judge that died).
  void fail_after(int n) { fail_after_ = n; }
  // The ids asked for, in order, over every call.
  const std::vector<std::string>& asked() const { return asked_; }

  JudgeCapability capability() const override { return capability_; }

  Status judge(const std::vector<JudgeItem>& items,
               const std::function<void(const std::string&)>& emit) override {
    for (const JudgeItem& item : items) {
      if (fail_after_ >= 0 && emitted_ >= fail_after_)
        return Status::internal("the test double stopped after " + std::to_string(emitted_));
      asked_.push_back(item.id);
      VerdictSpec spec;
      if (!capability_.measures) {
        spec.compiled = spec.correct = false;
        spec.screened = true;
        const auto it = specs_.find(item.id);
        // A screen finds only what fails before the GPU.
        if (it != specs_.end() && (it->second.failure == schema::FailureClass::SYNTAX_ERROR ||
                                   it->second.failure == schema::FailureClass::STATIC_CHECK))
          spec = it->second;
      } else if (const auto it = specs_.find(item.id); it != specs_.end()) {
        spec = it->second;
      } else {
        spec = failed(schema::FailureClass::INCORRECT, true);
      }
      emit(verdict_line(item.id, spec));
      ++emitted_;
    }
    return Status::ok_status();
  }

 private:
  JudgeCapability capability_{true, "full", ""};
  std::map<std::string, VerdictSpec> specs_;
  std::vector<std::string> asked_;
  int fail_after_ = -1;
  int emitted_ = 0;
};

// A PairJudge that forwards to `judge`, which outlives it: the command owns (and destroys) what
// its opener returns, and the test reads what its test double was asked afterwards.
class BorrowedPairJudge : public PairJudge {
 public:
  explicit BorrowedPairJudge(PairJudge& judge) : judge_(judge) {}
  JudgeCapability capability() const override { return judge_.capability(); }
  Status judge(const std::vector<JudgeItem>& items,
               const std::function<void(const std::string&)>& emit) override {
    return judge_.judge(items, emit);
  }

 private:
  PairJudge& judge_;
};

}  // namespace dice::data::testing
