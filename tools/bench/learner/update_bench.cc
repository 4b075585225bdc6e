// update_bench: one TraceRL policy update (learner/train/policy_trainer.h) at SDAR shapes with
// random weights and synthetic traces: what a learner step costs on the GPU, and whether it fits.
//
//   update_bench [--models 1.7b,4b] [--sequences 8] [--prompt 512] [--response 4096]
//                [--forwards 8] [--checkpointing on,off] [--updates 2] [--dtype bf16|fp32]
//                [--device cuda|cpu] [--tiny] [--optimizer-on-cpu] [--parts]
//                [--peak-tflops 989] [--replicas 1] [--shard replica|optimizer|parameters|all]
//                [--clean shared,separate] [--attention-tile 0,256] [--push DIR] [--kernels 0]
//
// Each sample: --prompt random tokens, --response random tokens with random unmask steps (4
// steps, block 4), old log-probs of -5 (so ratios move and the clip engages) and advantages of
// +1/-1 alternating. One update = --forwards training-layout forwards (the step's samples split
// evenly; each holds every trace view of its samples) + backward + AdamW with fp32 masters.
// Reported per (model, checkpointing, learner.data_parallel.shard mode, clean copy shared or one
// per view, queries per attention tile, 0 for one dense attention:
// PolicyTrainerOptions::attention_tile): seconds per update (after
// one warm-up), scored tokens/s, model TFLOP/s and MFU against --peak-tflops
// (learner/train/training_flops.h: the FLOPs of the layout the forwards actually run, recomputation
// not counted; the H200's dense bf16 datasheet peak by default; with --replicas N, per device over
// N data-parallel replicas, learner/parallel/data_parallel.h), and the peak GPU memory of the
// update (weights, masters and Adam moments included). With --parts, also the seconds per update in
// each part (PolicyTrainerOptions::time_parts: upload, forward, backward, optimizer; the device
// synchronised around each, so the parts add up to a little more than an untimed update). With
// --push DIR, also the weight push by checkpoint folder after the updates, on each model's first
// row: the learner writing the policy checkpoint under DIR (learner/train/policy_checkpoint.h) and
// a worker opening it, loading it into its model and checksumming it (what
// RolloutEngine::update_weights does); the NCCL broadcast needs a second GPU and is the scaling
// issue's. With --kernels N, each row is followed by its timed updates' GPU time by kernel class
// and its N largest kernels (profile/kernel_span.h; CUPTI). An update that runs out of memory
// prints "OOM" and the bench moves on.
// --shard all compares learner.data_parallel.shard's modes on the same data in one process; with
// parameters, rows with checkpointing off are skipped, saying why (train_bench_flags.h).
#include <ATen/ATen.h>
#include <torch/cuda.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/remove_tree.h"
#include "learner/train/policy_checkpoint.h"
#include "learner/train/policy_trainer.h"
#include "learner/train/training_flops.h"
#include "model/checkpoint/weights_checksum.h"
#include "model/torch_compat.h"
#include "model/weights.h"
#include "tools/bench/gpu_memory.h"
#include "tools/bench/learner/train_bench_flags.h"
#include "tools/bench/profile/kernel_span.h"
#include "tools/bench/sdar_shapes.h"

namespace {

struct Flags {
  dice::bench::TrainBenchFlags train;
  int sequences = 8, forwards = 8, updates = 2;
  bool parts = false;
  // Each sample's clean copy: once beside all its trace views (shared) or once per view
  // (separate): PolicyTrainerOptions::share_clean_copy.
  std::vector<std::string> clean = {"shared"};
  std::string push;  // where to time the weight push by checkpoint folder; empty: not timed
};

// Seconds of a weight push by checkpoint folder: the learner saving `model` as `dir`, then a
// worker opening it, loading it into a model and checksumming it (into `model` itself: the same
// bytes move). The folder is removed afterwards.
std::pair<double, double> push_seconds(dice::Qwen3LMImpl& model, const std::string& dir) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  // No side files (tokenizer) to copy: their folder does not exist.
  const dice::Status saved = dice::save_policy_checkpoint(model, dir + ".no-side-files", dir);
  if (!saved.ok()) throw std::runtime_error(saved.to_string());
  const auto written = Clock::now();
  auto checkpoint = dice::Checkpoint::open(dir);
  if (!checkpoint.ok()) throw std::runtime_error(checkpoint.status().to_string());
  {
    torch::NoGradGuard no_grad;
    const dice::Status loaded = dice::load_weights(*checkpoint, model);
    if (!loaded.ok()) throw std::runtime_error(loaded.to_string());
  }
  const std::uint64_t checksum = dice::weights_checksum(*checkpoint);
  dice::compat::synchronize(model.lm_head.device());
  const auto read = Clock::now();
  // remove_tree: libtorch.so's own std::filesystem::remove_all crashes (common/remove_tree.h).
  const dice::Status removed = dice::remove_tree(dir);
  if (!removed.ok()) throw std::runtime_error(removed.to_string());
  if (checksum == 0) throw std::runtime_error("weights checksum 0");
  return {std::chrono::duration<double>(written - start).count(),
          std::chrono::duration<double>(read - written).count()};
}

bool parse(int argc, char** argv, Flags& f) {
  const bool ok = dice::bench::parse_flags(
      argc, argv, "update_bench",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        if (dice::bench::take_train_flag(flag, value, f.train)) {
          return;
        }
        if (flag == "--sequences") {
          f.sequences = std::stoi(value());
        } else if (flag == "--forwards") {
          f.forwards = std::stoi(value());
        } else if (flag == "--updates") {
          f.updates = std::stoi(value());
        } else if (flag == "--push") {
          f.push = value();
        } else if (flag == "--parts") {
          f.parts = true;
        } else if (flag == "--clean") {
          f.clean = dice::bench::split_list(value());
          for (const std::string& c : f.clean) {
            if (c != "shared" && c != "separate") {
              throw std::invalid_argument("--clean takes shared and/or separate, not " + c);
            }
          }
        } else {
          throw std::invalid_argument("unknown flag (see the header of update_bench.cc)");
        }
      });
  if (!ok) return false;
  if (f.sequences < 1 || f.forwards < 1 || f.updates < 1 || !train_flags_valid(f.train)) {
    std::fprintf(stderr,
                 "update_bench: --sequences, --forwards, --updates, --prompt, --response, "
                 "--peak-tflops and --replicas must be positive\n");
    return false;
  }
  return true;
}

std::vector<dice::TraceSample> synthetic_samples(const Flags& f, const dice::ModelConfig& c) {
  std::vector<dice::TraceSample> out(static_cast<size_t>(f.sequences));
  const int64_t vocab = std::min<int64_t>(c.vocab_size, c.mask_token_id);  // ids below the mask
  for (size_t s = 0; s < out.size(); ++s) {
    dice::TraceSample& t = out[s];
    at::Tensor p = at::randint(0, vocab, {f.train.prompt}, at::kLong);
    at::Tensor r = at::randint(0, vocab, {f.train.response}, at::kLong);
    at::Tensor k = at::randint(0, 4, {f.train.response}, at::kLong);
    t.prompt.assign(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + f.train.prompt);
    t.response.assign(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + f.train.response);
    t.unmask_steps.assign(k.data_ptr<int64_t>(), k.data_ptr<int64_t>() + f.train.response);
    t.old_log_probs.assign(static_cast<size_t>(f.train.response), -5.0f);
    t.advantage = s % 2 == 0 ? 1.0 : -1.0;
  }
  return out;
}

// One row of the table: a model under one value of each list flag.
struct Row {
  const dice::bench::NamedShape* shape = nullptr;
  std::string checkpointing, clean;
  int64_t tile = 0;
  dice::ShardMode shard = dice::ShardMode::kReplica;
};

// The row's columns after its settings: its timed updates, or why it did not run ("OOM",
// "skipped: ...", "error: ...": then *status 1). Its kernel profile into *profile. Every row
// starts from seed 1, so rows of one model train the same weights on the same samples.
std::string measure(const Flags& f, const dice::bench::BenchSetup& setup, const Row& row,
                    std::string* pushed, std::string* profile, int* status) {
  const std::string skipped = dice::bench::shard_skip_reason(row.shard, row.checkpointing == "on");
  if (!skipped.empty()) return skipped;
  const dice::bench::NamedShape& shape = *row.shape;
  at::manual_seed(1);
  std::vector<dice::TraceSample> samples = synthetic_samples(f, shape.config);
  dice::PolicyTrainerOptions o;
  o.layout.block_size = shape.config.block_size;
  o.layout.mask_token_id = shape.config.mask_token_id;
  o.optimizer.grad_accumulation = f.forwards;
  o.activation_checkpointing = row.checkpointing == "on";
  o.optimizer_on_cpu = f.train.optimizer_on_cpu;
  o.data_parallel.devices = setup.devices;
  o.data_parallel.shard = row.shard;
  o.time_parts = f.parts;
  o.share_clean_copy = row.clean == "shared";
  o.attention_tile = row.tile;
  try {
    dice::bench::reset_peak_gpu_memory();
    dice::Qwen3LM model(
        shape.config,
        c10::TensorOptions().dtype(f.train.fp32 ? at::kFloat : at::kBFloat16).device(setup.device));
    auto trainer = dice::PolicyTrainer::create(model, o);
    if (!trainer.ok()) throw std::runtime_error(trainer.status().to_string());
    double seconds = 0, flops = 0;
    int64_t tokens = 0;
    dice::PolicyUpdateStats parts;
    dice::bench::KernelSpan kernels(f.train.kernels);
    for (int u = 0; u <= f.updates; ++u) {  // update 0 warms up
      if (u == 1) kernels.begin();
      const auto start = std::chrono::steady_clock::now();
      auto stats = (*trainer)->update(samples);
      if (!stats.ok()) throw std::runtime_error(stats.status().to_string());
      if (!f.train.cpu) torch::cuda::synchronize();
      if (u == 0) continue;
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      tokens += stats->scored_tokens;
      flops += stats->model_flops;
      parts.upload_seconds += stats->upload_seconds / f.updates;
      parts.forward_seconds += stats->forward_seconds / f.updates;
      parts.backward_seconds += stats->backward_seconds / f.updates;
      parts.optimizer_seconds += stats->optimizer_seconds / f.updates;
    }
    *profile = kernels.end(seconds);
    char line[256], peak[32] = "-";
    const dice::bench::GpuMemory memory = dice::bench::gpu_memory();
    if (memory.known) std::snprintf(peak, sizeof peak, "%.1f", memory.peak / (1 << 30));
    const double tflops = flops / seconds / 1e12;
    std::snprintf(line, sizeof line, "%12.2f %14.0f %10.1f %6.1f%% %14s", seconds / f.updates,
                  static_cast<double>(tokens) / seconds, tflops, 100.0 * tflops / setup.peak_tflops,
                  peak);
    std::string result = line;
    if (f.parts) {
      std::snprintf(line, sizeof line, " %8.2f %8.2f %8.2f %9.2f", parts.upload_seconds,
                    parts.forward_seconds, parts.backward_seconds, parts.optimizer_seconds);
      result += line;
    }
    if (!f.push.empty() && *pushed != shape.name) {  // once a model: the same bytes
      const auto [save, load] = push_seconds(*model, f.push + "/" + shape.name);
      std::snprintf(line, sizeof line, " %11.2f %6.2f", save, load);
      result += line;
      *pushed = shape.name;
    }
    return result;
  } catch (const std::exception& e) {
    return dice::bench::failure_text(e, status);
  }
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!parse(argc, argv, f)) return 2;
  const std::vector<dice::bench::NamedShape> shapes =
      dice::bench::selected_shapes(f.train.models, f.train.tiny);
  int exit_code = 0;
  const std::optional<dice::bench::BenchSetup> setup =
      dice::bench::bench_setup(f.train, "update_bench", &exit_code);
  if (!setup) return exit_code;
  std::printf(
      "update_bench: %s, %d sequences of %lld prompt + %lld response tokens, %d forwards "
      "per update, %s, optimizer on the %s\n",
      (std::to_string(setup->devices.size()) + (f.train.cpu ? " cpu" : " cuda") + " replica(s)")
          .c_str(),
      f.sequences, static_cast<long long>(f.train.prompt), static_cast<long long>(f.train.response),
      f.forwards, f.train.fp32 ? "fp32" : "bf16",
      f.train.optimizer_on_cpu ? "CPU" : "model's device");
  std::printf("%-6s %-13s %-10s %-8s %5s %12s %14s %10s %7s %14s%s\n", "model", "checkpointing",
              "shard", "clean", "tile", "s/update", "scored tok/s", "TFLOP/s", "MFU", "peak GiB",
              (std::string(f.parts ? "   upload  forward backward optimizer (s/update)" : "") +
               (f.push.empty() ? "" : "  push: save   load (s)"))
                  .c_str());
  int status = 0;
  std::string pushed;  // the model whose push was timed last
  std::vector<Row> rows;
  for (const auto& shape : shapes) {
    for (const std::string& checkpointing : f.train.checkpointing) {
      for (const std::string& clean : f.clean) {
        for (int64_t tile : f.train.attention_tiles) {
          // The modes side by side: each the same update on the same data.
          for (dice::ShardMode shard : f.train.shards)
            rows.push_back({&shape, checkpointing, clean, tile, shard});
        }
      }
    }
  }
  for (const Row& row : rows) {
    std::string profile;
    const std::string result = measure(f, *setup, row, &pushed, &profile, &status);
    std::printf("%-6s %-13s %-10s %-8s %5lld %s\n%s", row.shape->name.c_str(),
                row.checkpointing.c_str(), dice::config::enum_to_name(row.shard).c_str(),
                row.clean.c_str(), static_cast<long long>(row.tile), result.c_str(),
                profile.c_str());
    std::fflush(stdout);
  }
  return status;
}
