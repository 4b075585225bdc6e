// sft_bench: SFT steps (learner/train/sft_trainer.h) at SDAR shapes with random weights and
// synthetic samples: seconds per step, trained tokens/s, model TFLOP/s and MFU, peak GPU memory.
//
//   sft_bench [--models 1.7b,4b,27m] [--batch 32] [--prompt 512] [--response 1536]
//             [--pack-length 0] [--rows-per-forward 1] [--checkpointing on,off] [--steps 2]
//             [--dtype bf16|fp32] [--device cuda|cpu] [--tiny] [--optimizer-on-cpu]
//             [--peak-tflops 989] [--replicas 1] [--shard replica|optimizer|parameters|all]
//             [--attention-tile 0,256] [--vary-lengths] [--kernels 0]
//
// Each sample: --prompt and --response random token ids; with --vary-lengths, a new batch every
// step whose samples' lengths are drawn from [length / 4, length], as a curriculum's are (each
// step's rows then have a width of their own, as in a real run). One step = the SFT objective over
// the batch (each sample noised at its own t; packed side by side into rows of --pack-length tokens
// when given, --rows-per-forward rows a forward) + backward + AdamW with fp32 masters. Tokens/s
// counts every token of every sample (prompt and response, one copy; the forwards run x_t and
// x_0). Model FLOPs: learner/train/training_flops.h (each sequence at its own length: neither
// padding nor recomputation counted), MFU against --peak-tflops (the H200's dense bf16 datasheet
// peak by default; with --replicas N, per device over N data-parallel replicas,
// learner/parallel/data_parallel.h). One row per (model, checkpointing, learner.data_parallel.shard
// mode, queries per attention tile: SftTrainerOptions::attention_tile, 0 for one dense attention).
// One warm-up step first; "OOM" where a step runs out of memory. With --kernels N, each row is
// followed by its timed steps' GPU time by kernel class and its N largest kernels
// (profile/kernel_span.h; CUPTI).
// --shard all compares learner.data_parallel.shard's modes on the same data in one process; with
// parameters, rows with checkpointing off are skipped, saying why (train_bench_flags.h).
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "learner/train/sft_trainer.h"
#include "learner/train/training_flops.h"
#include "model/torch_compat.h"
#include "tools/bench/gpu_memory.h"
#include "tools/bench/learner/train_bench_flags.h"
#include "tools/bench/profile/kernel_span.h"
#include "tools/bench/sdar_shapes.h"

namespace {

// SFT samples are shorter than RL traces: 512 + 1,536 tokens by default.
dice::bench::TrainBenchFlags sft_defaults() {
  dice::bench::TrainBenchFlags f;
  f.response = 1536;
  return f;
}

struct Flags {
  dice::bench::TrainBenchFlags train = sft_defaults();
  int batch = 32, steps = 2, rows_per_forward = 1;
  int64_t pack_length = 0;
  bool vary_lengths = false;
};

bool parse(int argc, char** argv, Flags& f) {
  const bool ok = dice::bench::parse_flags(
      argc, argv, "sft_bench",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        if (dice::bench::take_train_flag(flag, value, f.train)) {
          return;
        }
        if (flag == "--batch") {
          f.batch = std::stoi(value());
        } else if (flag == "--steps") {
          f.steps = std::stoi(value());
        } else if (flag == "--rows-per-forward") {
          f.rows_per_forward = std::stoi(value());
        } else if (flag == "--pack-length") {
          f.pack_length = std::stoll(value());
        } else if (flag == "--vary-lengths") {
          f.vary_lengths = true;
        } else {
          throw std::invalid_argument("unknown flag (see the header of sft_bench.cc)");
        }
      });
  if (!ok) return false;
  if (f.batch < 1 || f.steps < 1 || f.rows_per_forward < 1 || f.pack_length < 0 ||
      !train_flags_valid(f.train)) {
    std::fprintf(stderr,
                 "sft_bench: --batch, --steps, --rows-per-forward, --prompt, --response, "
                 "--peak-tflops and --replicas must be positive, --pack-length not negative\n");
    return false;
  }
  return true;
}

// length, or with --vary-lengths one drawn from [length / 4, length].
int64_t draw_length(const Flags& f, int64_t length) {
  if (!f.vary_lengths) return length;
  const int64_t least = std::max<int64_t>(1, length / 4);
  return at::randint(least, length + 1, {1}, at::kLong).item<int64_t>();
}

std::vector<dice::SftSample> synthetic_samples(const Flags& f, const dice::ModelConfig& c) {
  std::vector<dice::SftSample> out(static_cast<size_t>(f.batch));
  const int64_t vocab = std::min<int64_t>(c.vocab_size, c.mask_token_id);  // ids below the mask
  for (dice::SftSample& s : out) {
    at::Tensor p = at::randint(0, vocab, {draw_length(f, f.train.prompt)}, at::kLong);
    at::Tensor r = at::randint(0, vocab, {draw_length(f, f.train.response)}, at::kLong);
    s.prompt.assign(p.data_ptr<int64_t>(), p.data_ptr<int64_t>() + p.numel());
    s.response.assign(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
  }
  return out;
}

// One row of the table: a model under one value of each list flag.
struct Row {
  const dice::bench::NamedShape* shape = nullptr;
  std::string checkpointing;
  int64_t tile = 0;
  dice::ShardMode shard = dice::ShardMode::kReplica;
};

// The row's columns after its settings: its timed steps, or why it did not run ("OOM",
// "skipped: ...", "error: ...": then *status 1). Its kernel profile into *profile. Every row
// starts from seed 1, so rows of one model train the same weights on the same samples.
std::string measure(const Flags& f, const dice::bench::BenchSetup& setup, const Row& row,
                    std::string* profile, int* status) {
  const std::string skipped = dice::bench::shard_skip_reason(row.shard, row.checkpointing == "on");
  if (!skipped.empty()) return skipped;
  const dice::bench::NamedShape& shape = *row.shape;
  at::manual_seed(1);
  // One batch, or one per step (the warm-up's too) with --vary-lengths.
  std::vector<std::vector<dice::SftSample>> samples(f.vary_lengths ? f.steps + 1 : 1);
  for (auto& step_samples : samples) step_samples = synthetic_samples(f, shape.config);
  dice::SftTrainerOptions o;
  o.activation_checkpointing = row.checkpointing == "on";
  o.attention_tile = row.tile;
  o.optimizer_on_cpu = f.train.optimizer_on_cpu;
  o.data_parallel.devices = setup.devices;
  o.data_parallel.shard = row.shard;
  o.pack_length = f.pack_length;
  o.rows_per_forward = f.rows_per_forward;
  try {
    dice::bench::reset_peak_gpu_memory();
    dice::Qwen3LM model(
        shape.config,
        c10::TensorOptions().dtype(f.train.fp32 ? at::kFloat : at::kBFloat16).device(setup.device));
    auto trainer = dice::SftTrainer::create(model, o);
    if (!trainer.ok()) throw std::runtime_error(trainer.status().to_string());
    double seconds = 0, flops = 0, tokens = 0;
    int64_t forwards = 0;
    dice::bench::KernelSpan kernels(f.train.kernels);
    for (int s = 0; s <= f.steps; ++s) {  // step 0 warms up
      std::vector<const dice::SftSample*> batch;
      for (const auto& sample : samples[static_cast<size_t>(s) % samples.size()]) {
        batch.push_back(&sample);
        if (s > 0) tokens += static_cast<double>(sample.prompt.size() + sample.response.size());
      }
      if (s == 1) kernels.begin();
      const auto start = std::chrono::steady_clock::now();
      auto stats = (*trainer)->step(batch, 1e-5);
      if (!stats.ok()) throw std::runtime_error(stats.status().to_string());
      dice::compat::synchronize(setup.device);
      if (s == 0) continue;
      seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      flops += stats->model_flops;
      forwards = stats->forwards;
    }
    *profile = kernels.end(seconds);
    char line[160], peak[32] = "-";
    const dice::bench::GpuMemory memory = dice::bench::gpu_memory();
    if (memory.known) std::snprintf(peak, sizeof peak, "%.1f", memory.peak / (1 << 30));
    const double tflops = flops / seconds / 1e12;
    std::snprintf(line, sizeof line, "%10.2f %12.0f %10.1f %6.1f%% %9lld %10s", seconds / f.steps,
                  tokens / seconds, tflops, 100.0 * tflops / setup.peak_tflops,
                  static_cast<long long>(forwards), peak);
    return line;
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
      dice::bench::bench_setup(f.train, "sft_bench", &exit_code);
  if (!setup) return exit_code;
  std::printf(
      "sft_bench: %s, batch %d of %lld prompt + %lld response tokens, pack length %lld, %d "
      "row(s) a forward, %s, optimizer on the %s\n",
      (std::to_string(setup->devices.size()) + (f.train.cpu ? " cpu" : " cuda") + " replica(s)")
          .c_str(),
      f.batch, static_cast<long long>(f.train.prompt), static_cast<long long>(f.train.response),
      static_cast<long long>(f.pack_length), f.rows_per_forward, f.train.fp32 ? "fp32" : "bf16",
      f.train.optimizer_on_cpu ? "CPU" : "model's device");
  std::printf("%-6s %-13s %-10s %5s %10s %12s %10s %7s %9s %10s\n", "model", "checkpointing",
              "shard", "tile", "s/step", "tokens/s", "TFLOP/s", "MFU", "forwards", "peak GiB");
  int status = 0;
  std::vector<Row> rows;
  for (const auto& shape : shapes) {
    for (const std::string& checkpointing : f.train.checkpointing) {
      for (int64_t tile : f.train.attention_tiles) {
        // The modes side by side: each the same steps on the same data.
        for (dice::ShardMode shard : f.train.shards)
          rows.push_back({&shape, checkpointing, tile, shard});
      }
    }
  }
  for (const Row& row : rows) {
    std::string profile;
    const std::string result = measure(f, *setup, row, &profile, &status);
    std::printf("%-6s %-13s %-10s %5lld %s\n%s", row.shape->name.c_str(), row.checkpointing.c_str(),
                dice::config::enum_to_name(row.shard).c_str(), static_cast<long long>(row.tile),
                result.c_str(), profile.c_str());
    std::fflush(stdout);
  }
  return status;
}
