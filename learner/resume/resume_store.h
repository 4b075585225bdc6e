// The resume folder of a run: <learner.checkpoint.dir>/<run id>/resume, holding
//
//   position.json   the RunPosition (run_position.h), written last
//   model/          the weights in the Hugging Face layout (the policy stages write it)
//   optimizer.pt    the fp32 masters, AdamW's state and the RNG states
//   (learner/parallel/master_weights.h),
//                   when a trainer exists
//
// A new one is built under resume.partial, synced whole (every file and folder in it fsynced),
// and swapped in by renames (resume -> resume.old, resume.partial -> resume, the base folder
// fsynced, then resume.old removed), so at every instant one complete folder exists on the disk:
// a crash between the two renames leaves resume.old, which read_resume() then takes, and a power
// loss before the renames reached the disk leaves the old folder whole, resume.old included.
//
// A full disk: before resume.partial is made, the file system must have room for a folder as
// large as the current one plus run.min_free_disk_mb, or the write is refused with an IOError
// naming the folder and the bytes (common/disk_space.h); a write that fails later removes
// resume.partial, whose space the run's other writes need. The current folder stays either way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/durable_file.h"
#include "common/status.h"
#include "learner/resume/run_position.h"

namespace dice {

struct ResumePoint {
  std::string dir;  // the folder holding position.json, model/, optimizer.pt
  RunPosition position;
};

// Writes `fill`'s files (into the folder it is given) and then `position` as a new resume
// folder under `base_dir`, replacing the old one. IOError naming the path that failed.
// `min_free_bytes`: run.min_free_disk_mb in bytes. `file_system`: where the syncs, renames and
// statvfs go (tests record or set them).
Status write_resume(const std::string& base_dir, const RunPosition& position,
                    const std::function<Status(const std::string& dir)>& fill,
                    std::uint64_t min_free_bytes = 0,
                    FileSystem& file_system = posix_file_system());

// The run's newest complete resume folder under `base_dir`; NotFound when it has none;
// InvalidArgument naming the file when position.json does not parse.
Result<ResumePoint> read_resume(const std::string& base_dir);

}  // namespace dice
