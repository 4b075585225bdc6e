// The sandbox on a GPU node (label gpu; skips without NVIDIA device nodes): a run with
// SandboxSpec::gpu_devices = {N} sees exactly host GPU N, as CUDA device 0, and CUDA works under
// every layer (user namespace, own root, seccomp, no_new_privs); NVML does not load and
// /proc/driver/nvidia shows GPU N only (sandbox_driver_view.h).
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "reward/sandbox/sandbox.h"
#include "reward/sandbox/sandbox_root.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

namespace fs = std::filesystem;

// The host's GPUs by PCI bus id, in the order CUDA_VISIBLE_DEVICES numbers them here.
std::vector<std::string> host_gpus() {
  std::vector<std::string> buses;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc/driver/nvidia/gpus", ec)) {
    buses.push_back(entry.path().filename().string());
  }
  std::sort(buses.begin(), buses.end());
  return buses;
}

// "0000:18:00.0" (/proc, CUDA) and "00000000:18:00.0" (nvidia-smi) alike: bus, device and function,
// lower case.
std::string bus_tail(std::string id) {
  const size_t colon = id.find(':');
  id = colon == std::string::npos ? id : id.substr(colon + 1);
  id.erase(std::remove_if(id.begin(), id.end(), [](unsigned char c) { return std::isspace(c); }),
           id.end());
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  return id;
}

TEST(SandboxGpuTest, ARunSeesOnlyItsGpuAsDeviceZeroAndCudaWorks) {
  if (geteuid() != 0) GTEST_SKIP() << "the isolated sandbox needs root";
  const std::vector<std::string> gpus = host_gpus();
  if (gpus.empty() || access("/dev/nvidiactl", F_OK) != 0) GTEST_SKIP() << "no NVIDIA GPU here";
  // The python with torch: DICE_TEST_PYTHON, else python3 on PATH (the node's venv).
  const char* python = std::getenv("DICE_TEST_PYTHON");
  // The first and the last GPU: the last one's ordinal, minor number and CUDA index differ.
  std::vector<int> ordinals = {0};
  if (gpus.size() > 1) ordinals.push_back(static_cast<int>(gpus.size()) - 1);
  for (int ordinal : ordinals) {
    SandboxSpec spec;
    // The bus from CUDA's driver API (nvidia-smi is NVML's, masked in the run), then what the
    // run sees of NVML and of /proc/driver/nvidia.
    spec.argv = {python ? python : "python3", "-c",
                 "import ctypes, os, subprocess\n"
                 "print('NODES', sorted(n for n in os.listdir('/dev') if n.startswith('nvidia')))\n"
                 "print('VISIBLE', os.environ['CUDA_VISIBLE_DEVICES'])\n"
                 "cuda = ctypes.CDLL('libcuda.so.1')\n"
                 "dev, bus = ctypes.c_int(), ctypes.create_string_buffer(64)\n"
                 "assert cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0\n"
                 "assert cuda.cuDeviceGetPCIBusId(bus, 64, dev) == 0\n"
                 "print('BUS', bus.value.decode())\n"
                 "try:\n"
                 "    ctypes.CDLL('libnvidia-ml.so.1'); print('NVML LOADED')\n"
                 "except OSError as e:\n"
                 "    print('NVML NOT LOADED', e)\n"
                 "try:\n"
                 "    smi = subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True)\n"
                 "    print('SMI', smi.returncode, smi.stdout.count('GPU '))\n"
                 "except OSError as e:\n"
                 "    print('SMI', e)\n"
                 "print('PROC', sorted(os.listdir('/proc/driver/nvidia')),\n"
                 "      sorted(os.listdir('/proc/driver/nvidia/gpus')))\n"
                 "import torch\n"
                 "x = torch.ones(1024, device='cuda')\n"
                 "print('CUDA', torch.cuda.device_count(), float(x.sum()))\n"};
    spec.gpu_devices = {ordinal};
    spec.timeout_seconds = 300;
    spec.memory_limit_mb = 65536;
    spec.limit_data_not_address_space = true;
    spec.max_processes = 64;
    auto run = run_sandboxed(spec);
    ASSERT_TRUE(run.ok()) << run.status().to_string();
    const SandboxResult& r = run.value();
    ASSERT_TRUE(r.succeeded()) << "GPU " << ordinal << ": " << describe_sandbox_result(r) << "\n"
                               << r.stdout_text << r.stderr_text;
    EXPECT_TRUE(r.isolated && r.private_root && r.seccomp);
    const std::string own = "'nvidia" + std::to_string(gpu_device_minor(ordinal)) + "'";
    EXPECT_NE(r.stdout_text.find(own), std::string::npos) << r.stdout_text;
    int numbered = 0;
    for (size_t at = r.stdout_text.find("'nvidia"); at != std::string::npos;
         at = r.stdout_text.find("'nvidia", at + 1)) {
      numbered += std::isdigit(static_cast<unsigned char>(r.stdout_text[at + 7])) ? 1 : 0;
    }
    EXPECT_EQ(numbered, 1) << r.stdout_text;
    EXPECT_NE(r.stdout_text.find("VISIBLE 0\n"), std::string::npos) << r.stdout_text;
    const size_t bus = r.stdout_text.find("BUS ");
    ASSERT_NE(bus, std::string::npos) << r.stdout_text;
    const std::string seen = r.stdout_text.substr(bus + 4, r.stdout_text.find('\n', bus) - bus - 4);
    EXPECT_EQ(bus_tail(seen), bus_tail(gpus[static_cast<size_t>(ordinal)]))
        << "GPU " << ordinal << " ran on another GPU: " << r.stdout_text;
    EXPECT_NE(r.stdout_text.find("CUDA 1 1024.0\n"), std::string::npos) << r.stdout_text;
    // Nothing of the other GPUs and their processes: NVML does not load (nvidia-smi with it), and
    // the driver's proc folder holds the run's own GPU only.
    EXPECT_NE(r.stdout_text.find("NVML NOT LOADED"), std::string::npos) << r.stdout_text;
    EXPECT_EQ(r.stdout_text.find("SMI 0 "), std::string::npos) << r.stdout_text;
    std::vector<std::string> kept = {"gpus"};
    for (const char* name : kNvidiaProcFiles) {
      if (access((std::string(kNvidiaProcDir) + "/" + name).c_str(), R_OK) == 0)
        kept.push_back(name);
    }
    std::sort(kept.begin(), kept.end());
    std::string listed;
    for (const auto& name : kept) listed += (listed.empty() ? "'" : ", '") + name + "'";
    EXPECT_NE(r.stdout_text.find("PROC [" + listed + "] ['" + gpus[static_cast<size_t>(ordinal)] +
                                 "']\n"),
              std::string::npos)
        << r.stdout_text;
  }
}

}  // namespace
}  // namespace dice
