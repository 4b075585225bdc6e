// What this machine can judge with, found the way tools/up finds it: a GPU (nvidia-smi lists
// one), nvcc, a Python that imports torch; and where dice-eval's neighbours are (dice-cluster,
// the checkout's configs). Nothing here pretends: no GPU means reward modes that say so.
#pragma once

#include <string>

namespace dice::eval {

struct Machine {
  bool gpu = false;
  std::string gpus;  // nvidia-smi -L's lines, for the log
};

// `nvidia-smi -L` succeeds and lists at least one "GPU ".
Machine probe_machine();

// A path that exists and may be executed; a bare name is looked up in PATH.
bool is_executable(const std::string& program);

// `python -c 'import torch'` succeeds.
bool python_imports_torch(const std::string& python);

// The reward mode without --reward-mode: full with a GPU; else compile_only when nvcc (at
// `nvcc_path`) and a Python with torch (the reward service's headers) are there, else
// extraction_only.
std::string default_reward_mode(const Machine& machine, const std::string& nvcc_path,
                                const std::string& python);

// The dice-cluster beside dice-eval: <self>/../../cluster/dice-cluster (a build tree), then
// <self dir>/dice-cluster (installed together), then PATH. "" when none.
std::string find_cluster_executable();

// The default base config: <checkout>/configs/local.yaml with a GPU, configs/toy.yaml without
// (the checkout dice-eval was built from).
std::string default_config(const Machine& machine);

// `text` quoted for a POSIX shell.
std::string shell_quote(const std::string& text);

}  // namespace dice::eval
