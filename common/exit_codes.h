// The exit statuses dice's services share with whoever restarts them (dice-cluster's supervisor,
// the slurm backend's job script): which endings a restart could mend and which it could not.
#pragma once

namespace dice {

// A clean end: the work is done (a service that ends so is not restarted).
inline constexpr int kExitOk = 0;
// A failure: a restart may go on where this process stopped (the supervisor restarts it).
inline constexpr int kExitFailure = 1;
// Bad input: a missing or invalid file or setting. Started again it fails the same way; the run
// stops and says why.
inline constexpr int kExitBadInput = 2;
// Too little free disk space for a write the run must make (common/disk_space.h). A restart
// would redo the step's rollouts and rewards and meet the same disk; the run stops and says
// why, for an operator to free space and resume.
inline constexpr int kExitNoDiskSpace = 3;
// This machine cannot do the work: no GPU, or no CUDA toolchain, where the work needs one (a
// reward worker, a rollout worker on cuda, dice-judge, dice-data build-sft). Started again on
// the same node it fails the same way; the run stops and says so, for an operator to fix the
// node or the plan. Kept apart from kExitNoDiskSpace so the stop reason names the right cause.
inline constexpr int kExitNoDevice = 4;

}  // namespace dice
