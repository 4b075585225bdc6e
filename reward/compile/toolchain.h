// The compiler toolchain a reward worker builds candidates with, probed once at start: nvcc and
// its version, the target GPU architecture, and what torch's own extension builder would pass
// (include and library folders, ABI macros, the extension suffix), read from the configured
// Python's torch by python/probe_torch.py. Its identity() is part of every kernel's cache key.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace dice {

struct ToolchainOptions {
  // The CUDA compiler. Default: /usr/local/cuda/bin/nvcc
  std::string nvcc = "/usr/local/cuda/bin/nvcc";
  // Host C++ compiler for the binding file and the link. Default: c++
  std::string cxx = "c++";
  // Python with torch (the one that will import the built modules). Default: python3
  std::string python = "python3";
  // Target architecture, e.g. "sm_90"; empty = the local GPU's, from nvidia-smi. Default: empty
  std::string cuda_arch;
  // Folder of probe_torch.py. Default: the source tree's reward/python
  std::string script_dir = DICE_REWARD_PYTHON_DIR;
};

struct Toolchain {
  std::string nvcc;
  std::string cxx;
  std::string python;
  std::string nvcc_version;  // e.g. "Cuda compilation tools, release 13.0, V13.0.88"
  std::string arch;          // e.g. "sm_90"
  std::string torch_version;
  std::vector<std::string> include_paths;    // torch's, plus the Python headers
  std::vector<std::string> library_paths;    // torch's lib folder and the CUDA lib folder
  std::vector<std::string> torch_libraries;  // -l names present there (CUDA ones only if built)
  std::vector<std::string> defines;          // -D flags: ABI, pybind11 ABI tags
  std::string ext_suffix;                    // e.g. ".cpython-311-x86_64-linux-gnu.so"

  // What a compiled kernel depends on besides its source and flags.
  std::string identity() const;
};

// Errors name the failing piece: "no PyTorch in python3: ...", "nvcc not found at ...",
// "no GPU found (nvidia-smi ...); set cuda_arch".
Result<Toolchain> probe_toolchain(const ToolchainOptions& options);

// "9.0" -> "sm_90"; empty on malformed input.
std::string arch_from_compute_cap(const std::string& compute_cap);

}  // namespace dice
