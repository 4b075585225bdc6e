// A precompiled header for the binding file (binding.h: binding_prelude). The binding's torch and
// pybind11 headers are the same for every candidate, and parsing them was most of the binding's
// compile time (measured with torch 1.13 headers and g++ 12: 9.1 s -> 4.4 s per binding, one
// 16 s build of the .gch per toolchain and flags).
//
// Layout: <cache_dir>/pch-<hash>/binding_prelude.h and binding_prelude.h.gch, where the hash
// covers the prelude, the compiler flags and the toolchain. The first build that needs one builds
// it; builds that start meanwhile compile without it (never wait). A failed build is not retried
// by this process. g++ uses the .gch only when it matches the flags exactly and reads the plain
// header otherwise, so a stale or damaged .gch costs time, never a wrong build.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "reward/compile/binding.h"
#include "reward/sandbox/sandbox.h"

namespace dice {

class BindingPch {
 public:
  // `cxx` is the C++ compiler; `flags` every flag of the binding compile that is the same for
  // all candidates (standard, -O, -fPIC, defines, include paths).
  BindingPch(std::string cache_dir, std::string cxx, std::vector<std::string> flags,
             std::string toolchain_identity);

  // The absolute path of the prelude header to #include (its .gch beside it), or "" when none
  // is ready: then the binding spells the prelude out. May build it first, in `sandbox`'s
  // limits and uid (its workdir is set here).
  std::string header_for(TorchHeaders headers, const SandboxSpec& sandbox);

 private:
  enum class State { kBuilding, kReady, kFailed };
  bool build(const std::string& dir, TorchHeaders headers, SandboxSpec sandbox);

  const std::string cache_dir_;
  const std::string cxx_;
  const std::vector<std::string> flags_;
  const std::string toolchain_identity_;
  std::mutex mu_;
  std::map<std::string, State> state_;  // by folder
  int build_counter_ = 0;
};

}  // namespace dice
