// The resume folder of a run: <learner.checkpoint.dir>/<run id>/resume, holding
//
//   position.json   the RunPosition (run_position.h), written last
//   model/          the weights in the Hugging Face layout (the policy stages write it)
//   optimizer.pt    the fp32 masters, AdamW's state and the RNG states (master_weights.h),
//                   when a trainer exists
//
// A new one is built under resume.partial and swapped in by renames (resume -> resume.old,
// resume.partial -> resume, resume.old removed), so at every instant one complete folder exists:
// a crash between the two renames leaves resume.old, which read_resume() then takes.
#pragma once

#include <functional>
#include <string>

#include "common/status.h"
#include "learner/run_position.h"

namespace dice {

struct ResumePoint {
  std::string dir;  // the folder holding position.json, model/, optimizer.pt
  RunPosition position;
};

// Writes `fill`'s files (into the folder it is given) and then `position` as a new resume
// folder under `base_dir`, replacing the old one. IOError naming the path that failed.
Status write_resume(const std::string& base_dir, const RunPosition& position,
                    const std::function<Status(const std::string& dir)>& fill);

// The run's newest complete resume folder under `base_dir`; NotFound when it has none;
// InvalidArgument naming the file when position.json does not parse.
Result<ResumePoint> read_resume(const std::string& base_dir);

}  // namespace dice
