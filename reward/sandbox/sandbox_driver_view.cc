#include "reward/sandbox/sandbox_driver_view.h"

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "reward/sandbox/sandbox.h"

namespace dice {

namespace fs = std::filesystem;

namespace {

// The folders the dynamic linker searches after its cache (ld.so(8)): a library there loads by
// name even when ldconfig never listed it.
constexpr const char* kLinkerDefaultDirs[] = {"/lib", "/usr/lib", "/lib64", "/usr/lib64"};

// Where ldconfig lives (Debian and Red Hat alike; /sbin is a link to /usr/sbin on merged-usr).
constexpr const char* kLdconfig[] = {"/sbin/ldconfig", "/usr/sbin/ldconfig"};

// {name, path} of each library line of `ldconfig -p`:
//   "\tlibnvidia-ml.so.1 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnvidia-ml.so.1"
std::vector<std::pair<std::string, std::string>> ld_cache_entries(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    const size_t arrow = line.find(" => ");
    const size_t name = line.find_first_not_of(" \t");
    if (arrow == std::string::npos || name == std::string::npos || name >= arrow) continue;
    std::string path = line.substr(arrow + 4);
    while (!path.empty() && (path.back() == ' ' || path.back() == '\r')) path.pop_back();
    if (path.empty() || path[0] != '/') continue;
    entries.emplace_back(line.substr(name, line.find_first_of(" \t", name) - name), path);
  }
  return entries;
}

bool is_nvml_name(const std::string& name) {
  return name.rfind(kNvmlLibraryPrefix, 0) == 0;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

std::vector<std::string> nvml_libraries_in_ld_cache(const std::string& ldconfig_output) {
  std::vector<std::string> paths;
  for (const auto& [name, path] : ld_cache_entries(ldconfig_output)) {
    if (is_nvml_name(name) && std::find(paths.begin(), paths.end(), path) == paths.end()) {
      paths.push_back(path);
    }
  }
  return paths;
}

std::vector<std::string> ld_cache_directories(const std::string& ldconfig_output) {
  std::set<std::string> dirs;
  for (const auto& entry : ld_cache_entries(ldconfig_output)) {
    dirs.insert(fs::path(entry.second).parent_path().string());
  }
  return {dirs.begin(), dirs.end()};
}

std::vector<std::string> nvml_library_files(const std::vector<std::string>& libraries,
                                            const std::vector<std::string>& dirs) {
  std::set<std::string> found;
  // Folders to search, those reached through a library's real path too (Debian's
  // /usr/lib/x86_64-linux-gnu/nvidia/current); each is searched once.
  std::vector<std::string> folders(dirs.begin(), dirs.end());
  std::set<std::string> searched;
  auto add = [&](const std::string& path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return;
    found.insert(path);
    folders.push_back(fs::path(path).parent_path().string());
    char real[PATH_MAX];
    if (realpath(path.c_str(), real) != nullptr) {
      found.insert(real);
      folders.push_back(fs::path(real).parent_path().string());
    }
  };
  for (const auto& path : libraries) add(path);
  while (!folders.empty()) {
    const std::string dir = folders.back();
    folders.pop_back();
    if (!searched.insert(dir).second) continue;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (is_nvml_name(entry.path().filename().string())) add(entry.path().string());
    }
  }
  return {found.begin(), found.end()};
}

std::vector<std::string> host_nvml_files() {
  // Once per process: the host's libraries do not change under a running worker (a driver
  // update replaces the files, and the worker restarts with it).
  static const std::vector<std::string> kFiles = [] {
    std::string listing;
    for (const char* ldconfig : kLdconfig) {
      if (access(ldconfig, X_OK) != 0) continue;
      SandboxSpec spec;
      spec.argv = {ldconfig, "-p"};
      spec.isolate = false;
      spec.uid = spec.gid = -1;
      spec.timeout_seconds = 30;
      spec.memory_limit_mb = 0;
      auto run = run_sandboxed(spec);
      if (run.ok() && run->succeeded()) listing = run->stdout_text;
      break;
    }
    std::vector<std::string> dirs = ld_cache_directories(listing);
    dirs.insert(dirs.end(), std::begin(kLinkerDefaultDirs), std::end(kLinkerDefaultDirs));
    return nvml_library_files(nvml_libraries_in_ld_cache(listing), dirs);
  }();
  return kFiles;
}

std::vector<std::string> nvidia_gpu_buses(const std::string& gpus_dir) {
  std::vector<std::string> buses;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(gpus_dir, ec)) {
    buses.push_back(entry.path().filename().string());
  }
  std::sort(buses.begin(), buses.end());
  return buses;
}

PrunedDir nvidia_proc_view(const std::string& dir, const std::vector<int>& gpus) {
  PrunedDir view;
  view.path = dir;
  for (const char* name : kNvidiaProcFiles) {
    const std::string path = dir + "/" + name;
    if (access(path.c_str(), R_OK) != 0) continue;
    std::string contents = read_all(path);
    if (std::string(name) == "params") {
      const std::string modify = "ModifyDeviceFiles: 1";
      const size_t at = contents.find(modify);
      if (at != std::string::npos) contents[at + modify.size() - 1] = '0';
    }
    view.files.emplace_back(name, std::move(contents));
  }
  const std::vector<std::string> buses = nvidia_gpu_buses(dir + "/gpus");
  for (int gpu : gpus) {
    if (gpu >= 0 && static_cast<size_t>(gpu) < buses.size()) {
      view.bound.push_back("gpus/" + buses[static_cast<size_t>(gpu)]);
    }
  }
  return view;
}

}  // namespace dice
