// update_bench: one TraceRL policy update (learner/policy_trainer.h) at SDAR shapes with random
// weights and synthetic traces: what a learner step costs on the GPU, and whether it fits.
//
//   update_bench [--models 1.7b,4b] [--sequences 8] [--prompt 512] [--response 4096]
//                [--forwards 8] [--checkpointing on,off] [--updates 2] [--dtype bf16|fp32]
//                [--device cuda|cpu] [--tiny] [--optimizer-on-cpu] [--parts]
//                [--peak-tflops 989]
//
// Each sample: --prompt random tokens, --response random tokens with random unmask steps (4
// steps, block 4), old log-probs of -5 (so ratios move and the clip engages) and advantages of
// +1/-1 alternating. One update = --forwards training-layout forwards (the step's samples split
// evenly; each holds every trace view of its samples) + backward + AdamW with fp32 masters.
// Reported per (model, checkpointing): seconds per update (after one warm-up), scored tokens/s,
// model TFLOP/s and MFU against --peak-tflops (learner/training_flops.h: the FLOPs of the layout
// the forwards actually run, recomputation not counted; the H200's dense bf16 datasheet peak by
// default), and the peak GPU memory of the update (weights, masters and Adam moments included).
// With --parts, also the seconds per update in each part (PolicyTrainerOptions::time_parts:
// upload, forward, backward, optimizer; the device synchronised around each, so the parts add up
// to a little more than an untimed update). An update that runs out of memory prints "OOM" and
// the bench moves on.
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "learner/policy_trainer.h"
#include "learner/training_flops.h"
#include "model/torch_compat.h"
#include "tools/bench/gpu_memory.h"
#include "tools/bench/sdar_shapes.h"

namespace {

struct Flags {
  std::vector<std::string> models = {"1.7b", "4b"};
  std::vector<std::string> checkpointing = {"on", "off"};
  int sequences = 8, forwards = 8, updates = 2;
  int64_t prompt = 512, response = 4096;
  bool fp32 = false, cpu = false, tiny = false, optimizer_on_cpu = false, parts = false;
  double peak_tflops = dice::kH200PeakBf16Flops / 1e12;
};

bool parse(int argc, char** argv, Flags& f) {
  std::string flag;
  try {
    for (int i = 1; i < argc; ++i) {
      flag = argv[i];
      auto value = [&]() -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument("needs a value");
        return argv[++i];
      };
      if (flag == "--models") {
        f.models = dice::bench::split_list(value());
      } else if (flag == "--checkpointing") {
        f.checkpointing = dice::bench::split_list(value());
      } else if (flag == "--sequences") {
        f.sequences = std::stoi(value());
      } else if (flag == "--forwards") {
        f.forwards = std::stoi(value());
      } else if (flag == "--updates") {
        f.updates = std::stoi(value());
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
      } else if (flag == "--parts") {
        f.parts = true;
      } else if (flag == "--peak-tflops") {
        f.peak_tflops = std::stod(value());
      } else {
        throw std::invalid_argument("unknown flag (see the header of update_bench.cc)");
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "update_bench: %s: %s\n", flag.c_str(), e.what());
    return false;
  }
  if (f.sequences < 1 || f.forwards < 1 || f.updates < 1 || f.prompt < 1 || f.response < 1 ||
      !(f.peak_tflops > 0)) {
    std::fprintf(stderr,
                 "update_bench: --sequences, --forwards, --updates, --prompt, --response and "
                 "--peak-tflops must be positive\n");
    return false;
  }
  return true;
}

std::vector<dice::TraceSample> synthetic_samples(const Flags& f, const dice::ModelConfig& c) {
  std::vector<dice::TraceSample> out(static_cast<size_t>(f.sequences));
  const int64_t vocab = std::min<int64_t>(c.vocab_size, c.mask_token_id);  // ids below the mask
  for (size_t s = 0; s < out.size(); ++s) {
    dice::TraceSample& t = out[s];
    at::Tensor p = at::randint(0, vocab, {f.prompt}, at::kLong);
    at::Tensor r = at::randint(0, vocab, {f.response}, at::kLong);
    at::Tensor k = at::randint(0, 4, {f.response}, at::kLong);
    t.prompt.assign(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + f.prompt);
    t.response.assign(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + f.response);
    t.unmask_steps.assign(k.data_ptr<int64_t>(), k.data_ptr<int64_t>() + f.response);
    t.old_log_probs.assign(static_cast<size_t>(f.response), -5.0f);
    t.advantage = s % 2 == 0 ? 1.0 : -1.0;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!parse(argc, argv, f)) return 2;
  std::vector<dice::bench::NamedShape> shapes;
  if (f.tiny) {
    shapes.push_back(dice::bench::tiny_shape());
  } else {
    for (const auto& s : dice::bench::sdar_shapes()) {
      for (const auto& m : f.models) {
        if (s.name == m) shapes.push_back(s);
      }
    }
  }
  if (!f.cpu && !dice::compat::cuda_available()) {
    std::printf("update_bench: skipped: needs a CUDA GPU (or --device cpu); this is %s\n",
                dice::compat::describe_torch().c_str());
    return 0;
  }
  const c10::Device device = f.cpu ? c10::Device(at::kCPU) : c10::Device(at::kCUDA, 0);
  std::printf(
      "update_bench: %s, %d sequences of %lld prompt + %lld response tokens, %d forwards "
      "per update, %s, optimizer on the %s\n",
      f.cpu ? "cpu" : "cuda:0", f.sequences, static_cast<long long>(f.prompt),
      static_cast<long long>(f.response), f.forwards, f.fp32 ? "fp32" : "bf16",
      f.optimizer_on_cpu ? "CPU" : "model's device");
  std::printf("%-6s %-13s %12s %14s %10s %7s %14s%s\n", "model", "checkpointing", "s/update",
              "scored tok/s", "TFLOP/s", "MFU", "peak GiB",
              f.parts ? "   upload  forward backward optimizer (s/update)" : "");
  int status = 0;
  for (const auto& shape : shapes) {
    for (const std::string& mode : f.checkpointing) {
      at::manual_seed(1);
      std::vector<dice::TraceSample> samples = synthetic_samples(f, shape.config);
      dice::PolicyTrainerOptions o;
      o.layout.block_size = shape.config.block_size;
      o.layout.mask_token_id = shape.config.mask_token_id;
      o.optimizer.grad_accumulation = f.forwards;
      o.activation_checkpointing = mode == "on";
      o.optimizer_on_cpu = f.optimizer_on_cpu;
      o.time_parts = f.parts;
      std::string result;
      try {
        dice::bench::reset_peak_gpu_memory();
        dice::Qwen3LM model(
            shape.config,
            c10::TensorOptions().dtype(f.fp32 ? at::kFloat : at::kBFloat16).device(device));
        auto trainer = dice::PolicyTrainer::create(model, o);
        if (!trainer.ok()) throw std::runtime_error(trainer.status().to_string());
        double seconds = 0, flops = 0;
        int64_t tokens = 0;
        dice::PolicyUpdateStats parts;
        for (int u = 0; u <= f.updates; ++u) {  // update 0 warms up
          const auto start = std::chrono::steady_clock::now();
          auto stats = (*trainer)->update(samples);
          if (!stats.ok()) throw std::runtime_error(stats.status().to_string());
          if (!f.cpu) torch::cuda::synchronize();
          if (u == 0) continue;
          seconds +=
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          tokens += stats->scored_tokens;
          flops += stats->model_flops;
          parts.upload_seconds += stats->upload_seconds / f.updates;
          parts.forward_seconds += stats->forward_seconds / f.updates;
          parts.backward_seconds += stats->backward_seconds / f.updates;
          parts.optimizer_seconds += stats->optimizer_seconds / f.updates;
        }
        char line[256], peak[32] = "-";
        const dice::bench::GpuMemory memory = dice::bench::gpu_memory();
        if (memory.known) std::snprintf(peak, sizeof peak, "%.1f", memory.peak / (1 << 30));
        const double tflops = flops / seconds / 1e12;
        std::snprintf(line, sizeof line, "%12.2f %14.0f %10.1f %6.1f%% %14s", seconds / f.updates,
                      static_cast<double>(tokens) / seconds, tflops, 100.0 * tflops / f.peak_tflops,
                      peak);
        result = line;
        if (f.parts) {
          std::snprintf(line, sizeof line, " %8.2f %8.2f %8.2f %9.2f", parts.upload_seconds,
                        parts.forward_seconds, parts.backward_seconds, parts.optimizer_seconds);
          result += line;
        }
      } catch (const std::exception& e) {
        const std::string what = e.what();
        result = what.find("out of memory") != std::string::npos ? "OOM" : "error: " + what;
        if (result != "OOM") status = 1;
      }
      std::printf("%-6s %-13s %s\n", shape.name.c_str(), mode.c_str(), result.c_str());
      std::fflush(stdout);
    }
  }
  return status;
}
