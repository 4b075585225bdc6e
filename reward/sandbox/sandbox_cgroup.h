// Per-run cgroups of the sandbox (sandbox.h): where the host offers a cgroup v2 hierarchy with the
// memory and pids controllers, each sandboxed run gets a cgroup of its own,
// <cgroup2 mount>/dice-sandbox/run-<worker pid>-<n>, with memory.max (no swap) and pids.max,
// removed when the run is destroyed. Unlike the rlimits (which stay), memory.max counts what the
// run really holds, tmpfs and page cache included, and pids.max counts every task of the run
// whatever its uid.
//
// Hosts without it: cgroup v1 or hybrid hosts (the dev VM: v2 mounted at
// /sys/fs/cgroup/unified with no controller), a container whose cgroup root holds processes, a
// read-only /sys/fs/cgroup. SandboxCgroups says what a run does then.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "options/reward_options.h"  // SandboxCgroups: what a run does where there is no cgroup

namespace dice {

// Whether runs can get a cgroup here: ok, or unavailable naming why. Checked (and the
// dice-sandbox parent cgroup made) once per process; later calls return the first answer.
Status sandbox_cgroups_available();

// One run's cgroup. The run's init joins it by writing "0" to procs_fd() between clone and exec,
// so everything the command starts is inside from its first instruction.
class RunCgroup {
 public:
  // `memory_bytes` 0 = no memory.max; `max_pids` 0 = no pids.max.
  static Result<std::unique_ptr<RunCgroup>> create(std::int64_t memory_bytes, int max_pids);
  ~RunCgroup();  // closes the fd and removes the cgroup (empty once the run's init is reaped)
  RunCgroup(const RunCgroup&) = delete;
  RunCgroup& operator=(const RunCgroup&) = delete;

  int procs_fd() const { return procs_fd_; }
  const std::string& path() const { return path_; }

 private:
  RunCgroup() = default;
  std::string path_;
  int procs_fd_ = -1;
};

}  // namespace dice
