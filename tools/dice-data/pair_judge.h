// The judging step of dice-data build-sft behind a small interface: the command (build_sft.h)
// runs the reward pipeline through it (pipeline_judge.h), and tests feed it verdicts from a test
// double. A judge either measures (correctness checked on a GPU, correct kernels timed) or, on a
// machine without a GPU, only screens (reward mode extraction_only: extraction and static
// checks); build-sft keeps nothing that was only screened.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/judge/judge_items.h"

namespace dice::data {

struct JudgeCapability {
  bool measures = false;  // correctness on a GPU and timing of correct kernels
  std::string mode;       // the reward mode: "full" when it measures, else "extraction_only"...
  std::string no_gpu;     // without measures: why (the toolchain probe's error)
};

class PairJudge {
 public:
  virtual ~PairJudge() = default;

  virtual JudgeCapability capability() const = 0;

  // Judges `items`, calling `emit` with one verdict line per item (reward/judge/judge.h's format:
  // what dice-judge writes) as each completes, never two calls at once. An error for a failure of
  // the judge itself (the lines emitted before it stand).
  virtual Status judge(const std::vector<JudgeItem>& items,
                       const std::function<void(const std::string&)>& emit) = 0;
};

}  // namespace dice::data
