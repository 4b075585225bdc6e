// What an isolated run may learn of the NVIDIA driver and of the GPUs that are not its own
// (sandbox_root.h builds the root from these; docs/SECURITY.md, T2 "Other GPUs and processes").
//
// The root already holds only the run's own /dev/nvidia<N>. Two more windows stay to close:
//   - NVML (libnvidia-ml.so*, under nvidia-smi and pynvml) in the bound library folders: it lists
//     every process on the GPU (the run's neighbours, the judge), their memory, clocks, the other
//     GPUs. Each file the dynamic linker could load as NVML is masked (an empty file bound over
//     it: dlopen fails with "file too short").
//   - /proc/driver/nvidia of the run's fresh proc lists every GPU of the host (model, bus, UUID,
//     minor). A tmpfs over it holds what a GPU container of the NVIDIA container toolkit gets
//     (libnvidia-container's mount_procfs and mount_procfs_gpu): copies of params (with
//     ModifyDeviceFiles 0), version and registry, and the folders of the run's own GPUs.
// Worker-side, before clone: the paths and contents are part of the plan.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace dice {

// The prefix of every NVML library file name: libnvidia-ml.so, libnvidia-ml.so.1,
// libnvidia-ml.so.<driver version>.
inline constexpr char kNvmlLibraryPrefix[] = "libnvidia-ml.so";

// The driver's folder of the run's proc, and the files of it a GPU run keeps (copied).
inline constexpr char kNvidiaProcDir[] = "/proc/driver/nvidia";
inline constexpr const char* kNvidiaProcFiles[] = {"params", "version", "registry"};

// A host directory that appears in the root holding only some of its entries: a tmpfs over it
// (read-only once filled) with `files` written into it and `bound` bound read-only from the
// host. RootRequest::pruned_dirs.
struct PrunedDir {
  // Absolute: inside /proc (the run's own proc) or inside a directory the root binds; otherwise
  // not in the root, and skipped.
  std::string path;
  // {name, contents} written into the tmpfs, each a plain file (0444).
  std::vector<std::pair<std::string, std::string>> files;
  // Paths relative to `path` of host directories bound read-only at their place; one the host
  // lacks is skipped.
  std::vector<std::string> bound;
};

// The paths `ldconfig -p` (its output, as text) lists for libraries whose name starts with
// kNvmlLibraryPrefix, in the order listed, without repeats. Pure.
std::vector<std::string> nvml_libraries_in_ld_cache(const std::string& ldconfig_output);

// The folders of every library `ldconfig -p` lists (the linker's configured folders that hold
// any), sorted, without repeats. Pure.
std::vector<std::string> ld_cache_directories(const std::string& ldconfig_output);

// Every existing file that could be loaded as NVML: `libraries`, the files named
// kNvmlLibraryPrefix* in `dirs` and in the folders of `libraries`, and the real paths of all
// (a link's target is what a bind over it must cover). Sorted, without repeats.
std::vector<std::string> nvml_library_files(const std::vector<std::string>& libraries,
                                            const std::vector<std::string>& dirs);

// nvml_library_files of the host: the linker cache's NVML entries (`ldconfig -p`, run once per
// process) over the cache's folders and the linker's default ones (/lib, /usr/lib, /lib64,
// /usr/lib64). Empty on a host without NVML.
std::vector<std::string> host_nvml_files();

// The bus folders of `gpus_dir` (/proc/driver/nvidia/gpus: "0000:18:00.0", ...), sorted: PCI bus
// order, the order CUDA_VISIBLE_DEVICES numbers host GPUs in. Empty without the folder.
std::vector<std::string> nvidia_gpu_buses(const std::string& gpus_dir);

// What a run with host GPUs `gpus` (ordinals) sees of `dir` (kNvidiaProcDir; tests pass a
// folder of their own): the kNvidiaProcFiles it has, params with "ModifyDeviceFiles: 1" made 0
// (the run cannot make device nodes, and must not try for the GPUs it lacks), and gpus/<bus> of
// each of `gpus`.
PrunedDir nvidia_proc_view(const std::string& dir, const std::vector<int>& gpus);

}  // namespace dice
