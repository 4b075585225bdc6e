// What a sandboxed run is given to start from (sandbox.h): its environment, the path of its
// executable, and what its root must hold beside the fixed parts (sandbox_root.h). Worker-side
// helpers of SandboxProcess::start, run before clone.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/sandbox/sandbox.h"
#include "reward/sandbox/sandbox_root.h"

namespace dice {

// The user name a sandboxed process sees in USER and LOGNAME, and in its root's /etc/passwd.
inline constexpr const char* kSandboxUserName = "dice-sandbox";

// The worker's allow-listed variables, HOME and TMPDIR = scratch, the user name, spec.env; with
// GPUs (isolated), CUDA_VISIBLE_DEVICES numbering them from 0 as the run sees them.
std::vector<std::string> child_environment(const SandboxSpec& spec, const std::string& scratch);

// `name` looked up in `path_var` when it has no '/'; with `unprivileged`, only a file others may
// execute (the sandbox uid is not the worker's). `name` itself when none is found.
std::string resolve_in_path(const std::string& name, const std::string& path_var,
                            bool unprivileged);

// The value of NAME in `env` ("NAME=value" entries; the last one wins); empty when absent.
std::string env_value(const std::vector<std::string>& env, const std::string& name);

// The root an isolated run gets: spec.read_only_paths (required), and where the command will
// look for code (optional): the executable, an interpreter's import paths, LD_LIBRARY_PATH,
// CUDA_HOME/CUDA_PATH; spec.masked_files and NVML's libraries masked, spec.pruned_dirs and
// /proc/driver/nvidia cut down to the run's GPUs (sandbox_driver_view.h). Errors (unavailable)
// name the path that cannot be had.
Result<std::unique_ptr<SandboxRoot>> plan_root(const SandboxSpec& spec, const std::string& scratch,
                                               const std::string& exe,
                                               const std::vector<std::string>& env, int uid,
                                               int gid);

}  // namespace dice
