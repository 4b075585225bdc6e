#include "tools/dice-eval/environment.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cluster/process.h"

#ifndef DICE_EVAL_SOURCE_DIR
#define DICE_EVAL_SOURCE_DIR "."
#endif

namespace dice::eval {
namespace fs = std::filesystem;
namespace {

struct Output {
  int rc = -1;
  std::string text;
};

// Runs a shell command line, its stdout captured (stderr dropped).
Output capture(const std::string& command) {
  Output out;
  FILE* pipe = popen((command + " 2>/dev/null").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) out.text += buffer.data();
  const int status = pclose(pipe);
  out.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

}  // namespace

std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Machine probe_machine() {
  Machine machine;
  if (!is_executable("nvidia-smi")) return machine;
  const Output listed = capture("nvidia-smi -L");
  if (listed.rc != 0) return machine;
  std::istringstream lines(listed.text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("GPU ", 0) == 0) {
      machine.gpu = true;
      machine.gpus += (machine.gpus.empty() ? "" : "; ") + line;
    }
  }
  return machine;
}

bool is_executable(const std::string& program) {
  if (program.empty()) return false;
  if (program.find('/') != std::string::npos) return access(program.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  if (path == nullptr) return false;
  std::stringstream entries(path);
  std::string dir;
  while (std::getline(entries, dir, ':')) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  }
  return false;
}

bool python_imports_torch(const std::string& python) {
  if (!is_executable(python)) return false;
  return capture(shell_quote(python) + " -c 'import torch'").rc == 0;
}

std::string default_reward_mode(const Machine& machine, const std::string& nvcc_path,
                                const std::string& python) {
  if (machine.gpu) return "full";
  if (is_executable(nvcc_path) && python_imports_torch(python)) return "compile_only";
  return "extraction_only";
}

std::string find_cluster_executable() {
  const std::string self = cluster::self_executable();
  if (!self.empty()) {
    const fs::path dir = fs::path(self).parent_path();
    for (const fs::path& candidate :
         {dir / ".." / ".." / "cluster" / "dice-cluster", dir / "dice-cluster"}) {
      if (access(candidate.c_str(), X_OK) == 0) return fs::absolute(candidate).lexically_normal();
    }
  }
  const char* path = std::getenv("PATH");
  std::stringstream entries(path == nullptr ? "" : path);
  std::string dir;
  while (std::getline(entries, dir, ':')) {
    const std::string candidate = dir + "/dice-cluster";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::string default_config(const Machine& machine) {
  return std::string(DICE_EVAL_SOURCE_DIR) +
         (machine.gpu ? "/configs/local.yaml" : "/configs/toy.yaml");
}

}  // namespace dice::eval
