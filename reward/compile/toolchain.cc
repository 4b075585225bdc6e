#include "reward/compile/toolchain.h"

#include <filesystem>

#include "common/json/fields.h"
#include "reward/sandbox/sandbox.h"

namespace dice {
namespace {

// The worker's own commands (probes, not candidate code) run without namespaces or uid switch.
Result<SandboxResult> run_trusted(std::vector<std::string> argv, double timeout_seconds) {
  SandboxSpec spec;
  spec.argv = std::move(argv);
  spec.isolate = false;
  spec.uid = -1;
  spec.timeout_seconds = timeout_seconds;
  spec.memory_limit_mb = 0;
  spec.max_processes = 4096;
  return run_sandboxed(spec);
}

std::string last_nonempty_line(const std::string& text) {
  size_t end = text.find_last_not_of("\n\r ");
  if (end == std::string::npos) return "";
  size_t start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end + 1 - (start + 1));
}

bool has_library(const std::vector<std::string>& dirs, const std::string& name) {
  for (const auto& d : dirs) {
    std::error_code ec;
    if (std::filesystem::exists(d + "/lib" + name + ".so", ec)) return true;
  }
  return false;
}

}  // namespace

std::string arch_from_compute_cap(const std::string& cap) {
  size_t dot = cap.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 >= cap.size()) return "";
  std::string major = cap.substr(0, dot);
  std::string minor = cap.substr(dot + 1);
  for (char c : major + minor) {
    if (c < '0' || c > '9') return "";
  }
  return "sm_" + major + minor;
}

std::string Toolchain::identity() const {
  std::string out = nvcc_version + "|" + arch + "|torch " + torch_version + "|" + cxx;
  for (const auto& d : defines) out += "|" + d;
  return out;
}

Result<Toolchain> probe_toolchain(const ToolchainOptions& options) {
  Toolchain tc;
  tc.nvcc = options.nvcc;
  tc.cxx = options.cxx;
  tc.python = options.python;

  auto nvcc = run_trusted({options.nvcc, "--version"}, 30);
  if (!nvcc.ok() || !nvcc->succeeded()) {
    return Status::not_found("nvcc not found or not working at " + options.nvcc +
                             (nvcc.ok() ? ": " + nvcc->stderr_text.substr(0, 300) : ""));
  }
  tc.nvcc_version = last_nonempty_line(nvcc->stdout_text);
  // "Build cuda_13.0.r13.0/compiler.36424714_0" is last; the release line is the one before it.
  size_t pos = nvcc->stdout_text.find("release");
  if (pos != std::string::npos) {
    size_t start = nvcc->stdout_text.rfind('\n', pos);
    size_t end = nvcc->stdout_text.find('\n', pos);
    tc.nvcc_version = nvcc->stdout_text.substr(start + 1, end - start - 1);
  }

  tc.arch = options.cuda_arch;
  if (tc.arch.empty()) {
    auto smi = run_trusted({"nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"}, 30);
    std::string first = smi.ok() ? smi->stdout_text.substr(0, smi->stdout_text.find('\n')) : "";
    tc.arch = arch_from_compute_cap(first);
    if (tc.arch.empty()) {
      return Status::not_found("no GPU found (nvidia-smi gave \"" + first +
                               "\"); set cuda_arch, e.g. sm_90");
    }
  }

  auto probe = run_trusted({options.python, options.script_dir + "/probe_torch.py"}, 120);
  if (!probe.ok()) return probe.status();
  if (probe->exit_code == 3) {
    return Status::not_found(last_nonempty_line(probe->stderr_text));
  }
  if (!probe->succeeded()) {
    return Status::internal("probe_torch.py failed with " + options.python + " (" +
                            describe_sandbox_result(*probe) +
                            "): " + probe->stderr_text.substr(0, 1000));
  }
  DICE_ASSIGN_OR_RETURN(const boost::json::value root,
                        parse_json(probe->stdout_text, "probe_torch.py output"));
  tc.torch_version = json_string(root, "torch_version");
  tc.include_paths = json_strings(root, "include_paths");
  tc.include_paths.push_back(json_string(root, "python_include"));
  tc.library_paths = json_strings(root, "library_paths");
  tc.ext_suffix = json_string(root, "ext_suffix", ".so");
  tc.defines.push_back("-D_GLIBCXX_USE_CXX11_ABI=" +
                       std::to_string(static_cast<int>(json_number(root, "cxx11_abi", 1))));
  const char* abi_names[] = {"PYBIND11_COMPILER_TYPE", "PYBIND11_STDLIB", "PYBIND11_BUILD_ABI"};
  const std::vector<std::string> abi = json_strings(root, "pybind11_abi");
  for (std::size_t i = 0; i < abi.size() && i < 3; ++i) {
    tc.defines.push_back(std::string("-D") + abi_names[i] + "=\"" + abi[i] + "\"");
  }
  // CUDA's own headers and runtime, next to nvcc (bin/../include, bin/../lib64).
  std::filesystem::path cuda_root = std::filesystem::path(options.nvcc).parent_path().parent_path();
  if (!cuda_root.empty()) {
    tc.include_paths.push_back((cuda_root / "include").string());
    tc.library_paths.push_back((cuda_root / "lib64").string());
  }
  for (const char* lib : {"c10", "torch", "torch_cpu", "torch_python", "c10_cuda", "torch_cuda"}) {
    if (has_library(tc.library_paths, lib)) tc.torch_libraries.push_back(lib);
  }
  tc.torch_libraries.push_back("cudart");
  return tc;
}

}  // namespace dice
