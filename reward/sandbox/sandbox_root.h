// The file system a sandboxed command sees (sandbox.h): a fresh tmpfs made the root with
// pivot_root, holding only what the run needs, everything from the host read-only but the run's
// scratch directory.
//
//   /usr /bin /sbin /lib* ......... the host's, read-only (merged-usr symlinks recreated as such)
//   /etc .......................... synthetic: passwd and group naming the run's user (not the
//                                   host's), hosts, nsswitch.conf, hostname; the host's
//                                   ld.so.cache and alternatives (cc, c++, cuda) read-only
//   /proc ......................... a fresh proc of the run's PID namespace; its
//                                   /proc/driver/nvidia a tmpfs holding only params, version,
//                                   registry and the run's own GPUs' gpus/<bus>
//                                   (RootRequest::pruned_dirs, sandbox_driver_view.h)
//   /sys .......................... a fresh sysfs, read-only (CUDA reads the PCI tree)
//   /dev .......................... tmpfs: null zero full random urandom (the host's nodes), fd
//                                   and std* links, a private /dev/shm; with GPUs, nvidiactl,
//                                   nvidia-uvm(-tools), nvidia-modeset and /dev/nvidia<N> of the
//                                   run's GPUs only
//   /tmp .......................... a private tmpfs
//   <scratch> ..................... the run's directory, read-write, at its host path (callers
//                                   pass paths in it)
//   other paths ................... read-only at their host paths: RootRequest::required_paths
//                                   (config, the command's executable, a compiler's include
//                                   folders) and optional_paths (the interpreter's prefix and
//                                   sys.path, LD_LIBRARY_PATH)
//   masked files .................. RootRequest::masked_files (NVML's libraries) read empty
// Nothing else: no /run (host sockets, lock files), /var, /home, /root, /srv, /mnt, /opt but
// what the lists name, and no compile cache beyond a build's own directory.
//
// The plan (every path, file content and mount of it) is made in the worker, before clone; the
// child only walks it with system calls (SandboxRoot::enter), as everything between clone and
// exec must.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "reward/sandbox/sandbox_driver_view.h"

namespace dice {

// The host name of every isolated run (its UTS namespace's, and its /etc/hostname).
inline constexpr char kSandboxHostname[] = "dice-sandbox";

struct RootRequest {
  // Bound read-write at its own path (absolute). Required.
  std::string scratch;
  // Bound read-only at their own paths; one that does not exist makes plan() fail. Default: none
  std::vector<std::string> required_paths;
  // Bound read-only at their own paths where they exist. Default: none
  std::vector<std::string> optional_paths;
  // Host GPU ordinals (as CUDA_VISIBLE_DEVICES numbers them, PCI bus order) whose device nodes
  // the run gets. Default: none (no GPU node at all)
  std::vector<int> gpu_devices;
  // The run's uid and gid as /etc/passwd and /etc/group name them (-1: root). Default: 65534
  int uid = 65534;
  int gid = 65534;
  // The name of that user and group. Default: dice-sandbox
  std::string user_name = "dice-sandbox";
  // Size of the private /tmp and of /dev/shm, each, in MiB. Default: 256
  std::int64_t tmpfs_size_mb = 256;
  // Host files that read empty in the root: an empty read-only file is bound over the real path
  // of each (so every link to it reads empty too; dlopen of a masked library fails, "file too
  // short"). One that does not exist, is no plain file or is not in the root is skipped.
  // Default: none
  std::vector<std::string> masked_files;
  // Directories that appear holding only some of their entries (PrunedDir); one not in the root
  // is skipped. Default: none
  std::vector<PrunedDir> pruned_dirs;
};

class SandboxRoot {
 public:
  // The plan for one run. Errors (unavailable) name the path that cannot be part of the root.
  static Result<std::unique_ptr<SandboxRoot>> plan(const RootRequest& request);
  ~SandboxRoot();
  SandboxRoot(const SandboxRoot&) = delete;
  SandboxRoot& operator=(const SandboxRoot&) = delete;

  // In the child, as root of the worker's user namespace, in a fresh mount namespace and the
  // run's PID namespace: builds the root and pivot_root()s into it (cwd "/"). 0, or -1 with errno
  // set and *failed_step naming the step for describe_step(). System calls only.
  int enter(int* failed_step) const;

  // What step `step` does, for the run's sandbox-unavailable reason.
  std::string describe_step(int step) const;

  struct Op;  // one step of the plan (sandbox_root.cc)

 private:
  class Planner;
  SandboxRoot();
  std::vector<Op> ops_;
};

// The directories a Python interpreter imports from (prefixes and sys.path), from running it
// once outside the sandbox; cached per executable for the life of the process. Empty when it does
// not run.
std::vector<std::string> python_import_paths(const std::string& python);

// The /dev/nvidia<N> minor number of host GPU `ordinal`: the ordinal-th GPU in PCI bus order in
// /proc/driver/nvidia/gpus, whose "Device Minor" it reads; the ordinal itself without that folder.
int gpu_device_minor(int ordinal);

}  // namespace dice
