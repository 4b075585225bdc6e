#include "reward/sandbox/sandbox_env.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace dice {
namespace {

namespace fs = std::filesystem;

// Variables a candidate may see from the worker's environment. Everything else (tokens, cloud
// credentials, the worker's own config) stays out.
constexpr const char* kEnvAllowList[] = {"PATH",
                                         "LANG",
                                         "LC_ALL",
                                         "LC_CTYPE",
                                         "CUDA_VISIBLE_DEVICES",
                                         "CUDA_HOME",
                                         "CUDA_PATH",
                                         "LD_LIBRARY_PATH",
                                         "NVIDIA_VISIBLE_DEVICES",
                                         "NVIDIA_DRIVER_CAPABILITIES",
                                         "TZ"};

// True when every directory above `path` lets others through and the file lets others execute:
// what an unprivileged child needs to exec it.
bool others_can_exec(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  for (fs::path dir = fs::path(path).parent_path(); !dir.empty() && dir != dir.root_path();
       dir = dir.parent_path()) {
    if (stat(dir.c_str(), &st) != 0 || !(st.st_mode & S_IXOTH)) return false;
  }
  return true;
}

std::vector<std::string> split_paths(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

}  // namespace

std::string resolve_in_path(const std::string& name, const std::string& path_var,
                            bool unprivileged) {
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    std::string dir = path_var.substr(start, end - start);
    if (!dir.empty()) {
      std::string candidate = dir + "/" + name;
      if (access(candidate.c_str(), X_OK) == 0 && (!unprivileged || others_can_exec(candidate))) {
        return candidate;
      }
    }
    start = end + 1;
  }
  return name;
}

std::vector<std::string> child_environment(const SandboxSpec& spec, const std::string& scratch) {
  std::vector<std::string> env;
  for (const char* name : kEnvAllowList) {
    if (const char* value = getenv(name)) env.push_back(std::string(name) + "=" + value);
  }
  env.push_back("HOME=" + scratch);
  env.push_back("TMPDIR=" + scratch);
  // Without a root of its own (isolate = false) a run's uid has no passwd entry; getpass.getuser()
  // (used by torch.profiler, among others) reads these first instead of failing with
  // "getpwuid(): uid not found".
  env.push_back(std::string("USER=") + kSandboxUserName);
  env.push_back(std::string("LOGNAME=") + kSandboxUserName);
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  env.push_back("PYTHONNOUSERSITE=1");
  for (const auto& e : spec.env) env.push_back(e);
  if (spec.isolate && !spec.gpu_devices.empty()) {
    // The run sees only its GPUs' device nodes, and CUDA numbers the GPUs it can open from 0:
    // whatever ordinals the worker's own numbering gave them, inside they are 0..n-1.
    env.erase(std::remove_if(env.begin(), env.end(),
                             [](const std::string& e) {
                               return e.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 ||
                                      e.rfind("NVIDIA_VISIBLE_DEVICES=", 0) == 0;
                             }),
              env.end());
    std::string visible;
    for (size_t i = 0; i < spec.gpu_devices.size(); ++i) {
      visible += (i == 0 ? "" : ",") + std::to_string(i);
    }
    env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  }
  return env;
}

std::string env_value(const std::vector<std::string>& env, const std::string& name) {
  std::string value;
  for (const auto& e : env) {
    if (e.size() > name.size() && e.compare(0, name.size(), name) == 0 && e[name.size()] == '=') {
      value = e.substr(name.size() + 1);
    }
  }
  return value;
}

Result<std::unique_ptr<SandboxRoot>> plan_root(const SandboxSpec& spec, const std::string& scratch,
                                               const std::string& exe,
                                               const std::vector<std::string>& env, int uid,
                                               int gid) {
  RootRequest request;
  request.scratch = scratch;
  for (const auto& path : spec.read_only_paths) {
    std::error_code ec;
    request.required_paths.push_back(fs::absolute(path, ec).string());
  }
  request.gpu_devices = spec.gpu_devices;
  request.uid = uid;
  request.gid = gid;
  request.user_name = kSandboxUserName;
  request.tmpfs_size_mb = spec.tmpfs_size_mb;
  // Optional: a missing executable is the exec's error (exit 127), as without a root.
  request.optional_paths.push_back(exe);
  if (fs::path(exe).filename().string().rfind("python", 0) == 0) {
    for (auto& path : python_import_paths(exe)) request.optional_paths.push_back(std::move(path));
  }
  for (const char* name : {"LD_LIBRARY_PATH", "CUDA_HOME", "CUDA_PATH"}) {
    for (auto& path : split_paths(env_value(env, name))) {
      request.optional_paths.push_back(std::move(path));
    }
  }
  // Nothing of the driver that tells of other GPUs and their processes (sandbox_driver_view.h):
  // NVML masked wherever the linker would find it, the run's LD_LIBRARY_PATH included, and
  // /proc/driver/nvidia cut down to the run's own GPUs.
  request.masked_files = spec.masked_files;
  for (const auto& files :
       {host_nvml_files(),
        nvml_library_files({}, split_paths(env_value(env, "LD_LIBRARY_PATH")))}) {
    request.masked_files.insert(request.masked_files.end(), files.begin(), files.end());
  }
  request.pruned_dirs = spec.pruned_dirs;
  if (access(kNvidiaProcDir, F_OK) == 0) {
    request.pruned_dirs.push_back(nvidia_proc_view(kNvidiaProcDir, spec.gpu_devices));
  }
  return SandboxRoot::plan(request);
}

}  // namespace dice
