// What update_bench and sft_bench share: their common flags (which shapes, activation
// checkpointing, the sample length, precision and device, where the optimizer runs, the peak MFU
// is against, the learner.data_parallel.shard modes), the device they run on, and how a run that
// failed or was skipped is reported.
#pragma once

#include <c10/core/Device.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "learner/train/training_flops.h"
#include "model/torch_compat.h"
#include "options/learner_options.h"
#include "tools/bench/sdar_shapes.h"

namespace dice::bench {

struct TrainBenchFlags {
  std::vector<std::string> models = {"1.7b", "4b"};
  std::vector<std::string> checkpointing = {"on", "off"};
  int64_t prompt = 512, response = 4096;
  bool fp32 = false, cpu = false, tiny = false, optimizer_on_cpu = false;
  double peak_tflops = kH200PeakBf16Flops / 1e12;
  int replicas = 1;  // data-parallel over this many devices (learner/parallel/data_parallel.h)
  // --shard: learner.data_parallel.shard's modes (a list, or all), each a row right after the
  // other's with the same samples and weights. The trainer is built through DataParallel with the
  // mode as the learner builds it, so on one device (--replicas 1) the optimizer and parameters
  // modes run their one-rank collective's path (learner/parallel/data_parallel.h) against the
  // replica in the same process. parameters needs --checkpointing on: its rows with it off say so
  // (shard_skip_reason) and the bench goes on.
  std::vector<ShardMode> shards = {ShardMode::kReplica};
  // Queries per attention tile, each a run (PolicyTrainerOptions::attention_tile; 0 = dense).
  std::vector<int64_t> attention_tiles = {256};
  // The N largest kernels of each row's timed part, after its line (profile/kernel_span.h); 0 off.
  int kernels = 0;
};

// --shard's modes: "all" (every learner.data_parallel.shard mode, replica first) or a
// comma-separated list of their names. Throws std::invalid_argument naming a name that is none.
inline std::vector<ShardMode> shard_modes(const std::string& list) {
  std::vector<ShardMode> out;
  if (list == "all") {
    for (const auto& entry : enum_names(ShardMode{})) out.push_back(entry.value);
    return out;
  }
  for (const std::string& name : split_list(list)) {
    ShardMode mode = ShardMode::kReplica;
    if (!config::enum_from_name(name, &mode)) {
      std::string names;
      for (const std::string& known : config::enum_name_list<ShardMode>()) names += known + ", ";
      throw std::invalid_argument("--shard takes all or a list of " + names + "not " + name);
    }
    out.push_back(mode);
  }
  if (out.empty()) throw std::invalid_argument("--shard needs at least one mode");
  return out;
}

// Why a row does not run under `shard` with activation checkpointing `checkpointing` on or off,
// or empty when it runs: shard: parameters gathers each layer again for the backward's
// recomputation, so it needs checkpointing (learner.activation_checkpointing), as the learner's
// config requires.
inline std::string shard_skip_reason(ShardMode shard, bool checkpointing) {
  if (shard != ShardMode::kParameters || checkpointing) return "";
  return "skipped: --shard parameters needs --checkpointing on "
         "(learner.activation_checkpointing: each layer is gathered again for its recomputation)";
}

// Takes `flag` (with value() for its argument) when it is one of the shared flags: --models,
// --checkpointing, --prompt, --response, --dtype bf16|fp32, --device cuda|cpu, --tiny,
// --optimizer-on-cpu, --peak-tflops, --replicas, --shard, --attention-tile, --kernels. False for
// any other flag.
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
  } else if (flag == "--shard") {
    f.shards = shard_modes(value());
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

// What every row of a bench shares: the devices it trains on and the peak its MFU is against.
struct BenchSetup {
  c10::Device device = c10::Device(c10::kCPU);  // --device's: the model's, replica 0's
  std::vector<c10::Device> devices;             // the replicas' (replica_devices)
  double peak_tflops = 0;                       // --peak-tflops of every device together
};

// The setup of `f`, or none when the bench does not run: *exit_code 0 where bench_device skips
// it, 2 where fewer GPUs are visible than --replicas asks for.
inline std::optional<BenchSetup> bench_setup(const TrainBenchFlags& f, const char* bench,
                                             int* exit_code) {
  const std::optional<c10::Device> on = bench_device(f, bench);
  *exit_code = 0;
  if (!on) return std::nullopt;
  BenchSetup setup;
  setup.device = *on;
  setup.devices = replica_devices(f, setup.device);
  *exit_code = 2;
  if (setup.devices.empty()) return std::nullopt;
  // MFU is per device: the FLOPs of all replicas against all their peaks.
  setup.peak_tflops = f.peak_tflops * static_cast<double>(setup.devices.size());
  return setup;
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
