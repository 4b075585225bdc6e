// What update_bench and sft_bench share: their common flags (which shapes, activation
// checkpointing, the sample length, precision and device, where the optimizer runs, the peak MFU
// is against), the device they run on, and how a run that failed is reported.
#pragma once

#include <c10/core/Device.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "learner/train/training_flops.h"
#include "model/torch_compat.h"
#include "tools/bench/sdar_shapes.h"

namespace dice::bench {

struct TrainBenchFlags {
  std::vector<std::string> models = {"1.7b", "4b"};
  std::vector<std::string> checkpointing = {"on", "off"};
  int64_t prompt = 512, response = 4096;
  bool fp32 = false, cpu = false, tiny = false, optimizer_on_cpu = false;
  double peak_tflops = kH200PeakBf16Flops / 1e12;
  int replicas = 1;  // data-parallel over this many devices (learner/parallel/data_parallel.h)
  // Queries per attention tile, each a run (PolicyTrainerOptions::attention_tile; 0 = dense).
  std::vector<int64_t> attention_tiles = {256};
  // The N largest kernels of each row's timed part, after its line (profile/kernel_span.h); 0 off.
  int kernels = 0;
};

// Takes `flag` (with value() for its argument) when it is one of the shared flags: --models,
// --checkpointing, --prompt, --response, --dtype bf16|fp32, --device cuda|cpu, --tiny,
// --optimizer-on-cpu, --peak-tflops, --replicas, --attention-tile, --kernels. False for any other
// flag.
inline bool take_train_flag(const std::string& flag, const std::function<std::string()>& value,
                            TrainBenchFlags& f) {
  if (flag == "--models") {
    f.models = split_list(value());
  } else if (flag == "--checkpointing") {
    f.checkpointing = split_list(value());
  } else if (flag == "--prompt") {
    f.prompt = std::stoll(value());
  } else if (flag == "--response") {
    f.response = std::stoll(value());
  } else if (flag == "--dtype") {
    f.fp32 = value() == "fp32";
  } else if (flag == "--device") {
    f.cpu = value() == "cpu";
  } else if (flag == "--tiny") {
    f.tiny = true;
  } else if (flag == "--optimizer-on-cpu") {
    f.optimizer_on_cpu = true;
  } else if (flag == "--peak-tflops") {
    f.peak_tflops = std::stod(value());
  } else if (flag == "--replicas") {
    f.replicas = std::stoi(value());
  } else if (flag == "--kernels") {
    f.kernels = std::stoi(value());
  } else if (flag == "--attention-tile") {
    f.attention_tiles.clear();
    for (const std::string& tile : split_list(value()))
      f.attention_tiles.push_back(std::stoll(tile));
  } else {
    return false;
  }
  return true;
}

// Whether the shared flags hold sensible values (lengths, peak and replicas positive).
inline bool train_flags_valid(const TrainBenchFlags& f) {
  bool tiles_valid = !f.attention_tiles.empty();
  for (int64_t tile : f.attention_tiles) tiles_valid = tiles_valid && tile >= 0;
  return f.prompt >= 1 && f.response >= 1 && f.peak_tflops > 0 && f.replicas >= 1 &&
         f.kernels >= 0 && tiles_valid;
}

// The devices of --replicas N starting at `first`: cuda:0..N-1 on a GPU (fewer visible: empty,
// after a line saying so), N CPU replicas on the CPU (the code path, not a speed).
inline std::vector<c10::Device> replica_devices(const TrainBenchFlags& f, c10::Device first) {
  std::vector<c10::Device> out;
  if (first.is_cuda() && f.replicas > compat::cuda_device_count()) {
    std::printf("--replicas %d: only %d CUDA device(s) visible\n", f.replicas,
                compat::cuda_device_count());
    return out;
  }
  for (int r = 0; r < f.replicas; ++r) {
    out.push_back(first.is_cuda() ? c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(r))
                                  : first);
  }
  return out;
}

// The device --device names; none (after "<bench>: skipped: ..." on stdout) when it is CUDA and
// this LibTorch has no GPU: CI runs the benches without one.
inline std::optional<c10::Device> bench_device(const TrainBenchFlags& f, const char* bench) {
  if (f.cpu) return c10::Device(c10::kCPU);
  if (!compat::cuda_available()) {
    std::printf("%s: skipped: needs a CUDA GPU (or --device cpu); this is %s\n", bench,
                compat::describe_torch().c_str());
    return std::nullopt;
  }
  return c10::Device(c10::kCUDA, 0);
}

// A run that threw: "OOM" when the device ran out of memory (the bench goes on: that is a
// result), else "error: ..." and *status 1.
inline std::string failure_text(const std::exception& e, int* status) {
  const std::string what = e.what();
  if (what.find("out of memory") != std::string::npos) return "OOM";
  *status = 1;
  return "error: " + what;
}

}  // namespace dice::bench
