// build-sft's judge on the real reward pipeline (reward/pipeline.h), in this process, as
// dice-judge runs it: extraction, static checks, nvcc with the compile cache, the sandboxed
// evaluation against the PyTorch reference, then timing (reward.timing: the judge's clock around
// rounds of the kernel's calls, the reference timed once the kernel's processes are gone, the GPU
// to itself).
#pragma once

#include <memory>
#include <ostream>

#include "common/status.h"
#include "tools/dice-data/build_sft_options.h"
#include "tools/dice-data/pair_judge.h"

namespace dice::data {

// A judge that measures when this machine has what the reward pipeline needs (nvcc, PyTorch with
// CUDA, a GPU: probe_reward_toolchain); else one that screens in extraction_only mode, its
// capability naming what is missing. InvalidArgument for a CUDA_VISIBLE_DEVICES that does not
// parse. Progress lines (headers prepared, candidates in flight) go to `log`.
Result<std::unique_ptr<PairJudge>> open_pipeline_judge(const SftJudgeOptions& options,
                                                       std::ostream& log);

}  // namespace dice::data
