// rollout_bench: generation throughput of BlockDiffusionSampler with random weights at the shapes
// of SDAR-1.7B and SDAR-4B (bf16, CUDA), for docs/BENCHMARKS.md.
//
//   rollout_bench [--models 1.7b,4b] [--batches 1,16,64,128] [--strategies static,dynamic]
//                 [--new-tokens 1024] [--prompt 64] [--block 4] [--steps 4]
//                 [--temperature 1] [--threshold 0.9] [--device cuda|cpu] [--tiny]
//                 [--prompt-jitter 0] [--min-new-tokens N] [--no-pack] [--no-graphs]
//                 [--kernels 0]
//
// For each model, batch B and strategy: B requests with random prompts of --prompt tokens, no
// stop tokens (every sequence generates exactly --new-tokens), max_batch = B, after a short
// warm-up run. --prompt-jitter J gives request i a prompt of --prompt + i mod (J + 1) tokens
// (different tails put the slots in different phases: only some commit a block in a forward);
// --min-new-tokens M spreads the requests' lengths evenly over M .. --new-tokens (slots go idle
// as the short ones end); --no-pack pads every slot to the longest chunk (SamplerOptions::
// pack_chunks off), for an A/B of the packed forward; --no-graphs runs the forwards eagerly
// instead of from CUDA graphs (SamplerOptions::cuda_graphs off). Prints:
//   tok/s         generated tokens / wall seconds of the whole run (prefill included)
//   ms/fwd        wall time per denoising forward (step), prefill included
//   fwd/tok       denoising forwards a sequence takes part in, per committed token
//   proc/tok      chunk tokens the forwards process (padding included), per committed token
//   MiB/seq       (CUDA) peak GPU memory above the model's weights during the run, per sequence
//   KV MiB/seq    the KV cache part of it (prompt + new tokens + 2 blocks per slot)
//   graphs        CUDA graphs captured during the run (one per forward shape), and
//   capture s     the seconds their capture took (inside `seconds`: a fresh sampler per run)
// --kernels N follows each row with its run's GPU time by kernel class, its N largest kernels and
// the kernels' share of the wall time (the rest: the host between forwards); CUPTI, whose
// recording adds to the run's time, so the row's own figures are best taken without it.
// --tiny swaps the shapes for a 2-layer toy model (a smoke test of the code path, e.g. on CPU).
// sdar_generate_reference.py runs SDAR's published generate loop on the same workload.
// Without a CUDA device (and without --device cpu) it prints why and exits 0.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <algorithm>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "model/qwen3.h"
#include "model/torch_compat.h"
#include "rollout/sampler.h"
#include "tools/bench/gpu_memory.h"
#include "tools/bench/profile/kernel_span.h"
#include "tools/bench/sdar_shapes.h"

namespace {

using Shape = dice::bench::NamedShape;

using dice::bench::sdar_config;

dice::ModelConfig tiny_config() {
  dice::ModelConfig c = sdar_config(64, 128, 2, 4, 2, false);
  c.vocab_size = 1024;
  c.head_dim = 16;
  c.mask_token_id = 1000;
  return c;
}

using dice::bench::split_list;

int usage(const std::string& message) {
  std::fprintf(stderr,
               "rollout_bench: %s\nusage: rollout_bench [--models 1.7b,4b] "
               "[--batches 1,16,64,128] [--strategies static,dynamic] [--new-tokens 1024] "
               "[--prompt 64] [--block 4] [--steps 4] [--temperature 1] [--threshold 0.9] "
               "[--device cuda|cpu] [--tiny] [--prompt-jitter 0] [--min-new-tokens N] "
               "[--no-pack] [--no-graphs]\n",
               message.c_str());
  return 2;
}

struct Run {
  double seconds = 0;
  dice::SamplerStats stats;
  double peak_bytes = 0;
  bool memory_known = false;  // the allocator's figures exist (LibTorch with CUDA)
};

struct Workload {
  int64_t batch = 1, prompt_len = 64, prompt_jitter = 0, min_new_tokens = 0;
};

dice::Result<Run> run_once(dice::Qwen3LM& lm, const dice::SamplerOptions& options,
                           const Workload& w, uint64_t seed) {
  const int64_t batch = w.batch;
  at::manual_seed(seed);
  std::vector<dice::GenerationRequest> requests(static_cast<size_t>(batch));
  const int64_t vocab = lm->config().vocab_size;
  const int64_t top = std::min<int64_t>(vocab, lm->config().mask_token_id);  // below the specials
  for (int64_t i = 0; i < batch; ++i) {
    const int64_t prompt_len = w.prompt_len + i % (w.prompt_jitter + 1);
    at::Tensor ids = at::randint(0, top, {prompt_len}, at::kLong);
    dice::GenerationRequest& r = requests[static_cast<size_t>(i)];
    r.id = static_cast<uint64_t>(i);
    r.prompt.assign(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + prompt_len);
    const int64_t most = options.sampling.max_new_tokens;
    if (w.min_new_tokens > 0 && w.min_new_tokens < most) {
      r.max_new_tokens = static_cast<int>(w.min_new_tokens + (most - w.min_new_tokens) * i /
                                                                 std::max<int64_t>(batch - 1, 1));
    }
  }
  const dice::bench::GpuMemory before = dice::bench::gpu_memory();
  dice::bench::reset_peak_gpu_memory();
  auto start = std::chrono::steady_clock::now();
  DICE_ASSIGN_OR_RETURN(auto sampler, dice::BlockDiffusionSampler::create(lm, options));
  DICE_ASSIGN_OR_RETURN(auto results, sampler->generate(std::move(requests)));
  Run run;
  // generate() returns after the last step's host copy, so the device work is done.
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  run.stats = sampler->stats();
  const dice::bench::GpuMemory after = dice::bench::gpu_memory();
  run.peak_bytes = after.peak - before.current;
  run.memory_known = after.known;
  return run;
}

struct Flags {
  std::string models = "1.7b,4b", batches = "1,16,64,128", strategies = "static,dynamic";
  std::string device_name = "cuda";
  int64_t new_tokens = 1024, prompt_len = 64, prompt_jitter = 0, min_new_tokens = 0;
  int block = 4, steps = 4;
  int kernels = 0;  // --kernels N: the measured run's N largest kernels (profile/kernel_span.h)
  double temperature = 1.0, threshold = 0.9;
  bool tiny = false, pack = true, graphs = true;
  std::vector<int64_t> batch_sizes;         // --batches, parsed by check_flags
  std::vector<dice::Remasking> remaskings;  // --strategies, parsed by check_flags
};

// Reads the command line into `f`: 0, or usage()'s exit code.
int parse_flags(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--tiny") {
      f->tiny = true;
      continue;
    }
    if (arg == "--no-pack") {
      f->pack = false;
      continue;
    }
    if (arg == "--no-graphs") {
      f->graphs = false;
      continue;
    }
    if (i + 1 >= argc) return usage("missing value for " + arg);
    std::string value = argv[++i];
    try {
      if (arg == "--models") {
        f->models = value;
      } else if (arg == "--batches") {
        f->batches = value;
      } else if (arg == "--strategies") {
        f->strategies = value;
      } else if (arg == "--new-tokens") {
        f->new_tokens = std::stoll(value);
      } else if (arg == "--prompt") {
        f->prompt_len = std::stoll(value);
      } else if (arg == "--prompt-jitter") {
        f->prompt_jitter = std::stoll(value);
      } else if (arg == "--min-new-tokens") {
        f->min_new_tokens = std::stoll(value);
      } else if (arg == "--block") {
        f->block = std::stoi(value);
      } else if (arg == "--steps") {
        f->steps = std::stoi(value);
      } else if (arg == "--temperature") {
        f->temperature = std::stod(value);
      } else if (arg == "--threshold") {
        f->threshold = std::stod(value);
      } else if (arg == "--device") {
        f->device_name = value;
      } else if (arg == "--kernels") {
        f->kernels = std::stoi(value);
      } else {
        return usage("unknown argument " + arg);
      }
    } catch (const std::exception&) {
      return usage(arg + ": not a number: " + value);
    }
  }
  return 0;
}

// Checks the values and parses the lists: 0, or usage()'s exit code.
int check_flags(Flags* f) {
  if (f->new_tokens < 1 || f->prompt_len < 1) {
    return usage("--new-tokens and --prompt must be >= 1");
  }
  if (f->prompt_jitter < 0 || f->min_new_tokens < 0 || f->kernels < 0) {
    return usage("--prompt-jitter, --min-new-tokens and --kernels must be >= 0");
  }
  if (f->device_name != "cuda" && f->device_name != "cpu") {
    return usage("--device must be cuda or cpu");
  }
  std::string bad;
  if (!dice::bench::parse_sizes(f->batches, &f->batch_sizes, &bad)) {
    return usage("--batches: not a positive integer: " + bad);
  }
  for (const std::string& s : split_list(f->strategies)) {
    if (s == "static") {
      f->remaskings.push_back(dice::Remasking::LOW_CONFIDENCE_STATIC);
    } else if (s == "dynamic") {
      f->remaskings.push_back(dice::Remasking::LOW_CONFIDENCE_DYNAMIC);
    } else if (s == "sequential") {
      f->remaskings.push_back(dice::Remasking::SEQUENTIAL);
    } else if (s == "entropy") {
      f->remaskings.push_back(dice::Remasking::ENTROPY_BOUNDED);
    } else {
      return usage("--strategies: unknown " + s + " (static, dynamic, sequential, entropy)");
    }
  }
  return 0;
}

// The model shapes --tiny or --models names: 0, or usage()'s exit code.
int select_shapes(const Flags& f, std::vector<Shape>* shapes) {
  if (f.tiny) {
    shapes->push_back({"tiny", tiny_config()});
    return 0;
  }
  const std::vector<Shape> known = dice::bench::sdar_shapes();
  for (const std::string& m : split_list(f.models)) {
    auto it = std::find_if(known.begin(), known.end(), [&](const Shape& s) { return s.name == m; });
    if (it == known.end()) return usage("unknown model " + m + " (1.7b or 4b)");
    shapes->push_back(*it);
  }
  return 0;
}

void print_header(const Flags& f, bool cuda) {
  std::printf(
      "rollout_bench: %s; %s random weights, prompt %lld, %lld new tokens, block %d, %d steps, "
      "temperature %g, threshold %g, no stop tokens, prompt jitter %lld, min new tokens %lld, "
      "%s forwards, CUDA graphs %s\n",
      dice::compat::describe_torch().c_str(), cuda ? "bf16" : "fp32",
      static_cast<long long>(f.prompt_len), static_cast<long long>(f.new_tokens), f.block, f.steps,
      f.temperature, f.threshold, static_cast<long long>(f.prompt_jitter),
      static_cast<long long>(f.min_new_tokens), f.pack ? "packed" : "padded",
      f.graphs ? "on" : "off");
  std::printf("%-6s %6s %-8s %12s %9s %8s %8s %9s %10s %11s %7s %10s\n", "model", "batch",
              "strategy", "tok/s", "seconds", "ms/fwd", "fwd/tok", "proc/tok", "MiB/seq",
              "KV MiB/seq", "graphs", "capture s");
}

// The sampler for one row, set up for the warm-up run (at most 8 new tokens).
dice::SamplerOptions sampler_options(const Flags& f, const dice::ModelConfig& c, int64_t batch,
                                     dice::Remasking remasking) {
  dice::SamplerOptions o;
  o.sampling.temperature = f.temperature;
  o.sampling.top_p = 1.0;
  o.sampling.top_k = 0;
  o.sampling.block_size = f.block;
  o.sampling.denoising_steps = f.steps;
  o.sampling.remasking = remasking;
  o.sampling.threshold = f.threshold;
  o.sampling.stop_token_ids = {};
  o.sampling.max_new_tokens = static_cast<int>(std::min<int64_t>(f.new_tokens, 8));
  o.mask_token_id = c.mask_token_id;
  o.max_batch = static_cast<int>(batch);
  o.max_sequence_length = f.prompt_len + f.prompt_jitter + f.new_tokens + 2 * f.block;
  o.pack_chunks = f.pack;
  o.cuda_graphs = f.graphs;
  return o;
}

Workload workload(const Flags& f, int64_t batch) {
  Workload w;
  w.batch = batch;
  w.prompt_len = f.prompt_len;
  w.prompt_jitter = f.prompt_jitter;
  w.min_new_tokens = f.min_new_tokens;
  return w;
}

// One line of the table: the measured run of `shape` at `batch` with `remasking`.
void print_row(const Shape& shape, int64_t batch, dice::Remasking remasking, const Run& run,
               const dice::SamplerOptions& o, const at::TensorOptions& options, bool cuda) {
  const dice::ModelConfig& c = shape.config;
  const dice::SamplerStats& s = run.stats;
  const double committed = static_cast<double>(std::max<int64_t>(s.committed_tokens, 1));
  const double kv_bytes = 2.0 * static_cast<double>(c.num_hidden_layers) *
                          static_cast<double>(c.num_key_value_heads * c.head_dim) *
                          static_cast<double>(o.max_sequence_length) *
                          static_cast<double>(options.dtype().itemsize());
  const double mib = 1024.0 * 1024.0;
  char peak[32] = "-";  // no allocator statistics without CUDA
  if (cuda && run.memory_known) {
    std::snprintf(peak, sizeof peak, "%.1f", run.peak_bytes / mib / static_cast<double>(batch));
  }
  std::printf("%-6s %6lld %-8s %12.1f %9.2f %8.2f %8.3f %9.3f %10s %11.1f %7lld %10.2f\n",
              shape.name.c_str(), static_cast<long long>(batch),
              dice::Remasking::LOW_CONFIDENCE_STATIC == remasking    ? "static"
              : dice::Remasking::LOW_CONFIDENCE_DYNAMIC == remasking ? "dynamic"
              : dice::Remasking::SEQUENTIAL == remasking             ? "sequent."
                                                                     : "entropy",
              static_cast<double>(s.generated_tokens) / run.seconds, run.seconds,
              run.seconds * 1e3 / static_cast<double>(std::max<int64_t>(s.steps, 1)),
              static_cast<double>(s.row_forwards) / committed,
              static_cast<double>(s.processed_tokens) / committed, peak, kv_bytes / mib,
              static_cast<long long>(s.graphs), s.graph_capture_seconds);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (int code = parse_flags(argc, argv, &f)) return code;
  if (int code = check_flags(&f)) return code;
  const bool cuda = f.device_name == "cuda";
  if (cuda && !dice::compat::cuda_available()) {
    std::printf("rollout_bench: skipped: needs a CUDA GPU (or --device cpu); this is %s\n",
                dice::compat::describe_torch().c_str());
    return 0;
  }
  std::vector<Shape> shapes;
  if (int code = select_shapes(f, &shapes)) return code;

  torch::NoGradGuard no_grad;
  const auto options = at::TensorOptions()
                           .dtype(cuda ? at::kBFloat16 : at::kFloat)
                           .device(cuda ? c10::Device(c10::kCUDA, 0) : c10::Device(c10::kCPU));
  print_header(f, cuda);
  for (Shape& shape : shapes) {
    shape.config.block_size = f.block;
    dice::Qwen3LM lm(shape.config, options);
    for (int64_t batch : f.batch_sizes) {
      for (dice::Remasking remasking : f.remaskings) {
        dice::SamplerOptions o = sampler_options(f, shape.config, batch, remasking);
        const Workload w = workload(f, batch);
        // Warm-up: kernels, cuBLAS handles, allocator pools.
        auto warm = run_once(lm, o, w, 1);
        if (!warm.ok()) {
          std::fprintf(stderr, "rollout_bench: %s\n", warm.status().to_string().c_str());
          return 1;
        }
        o.sampling.max_new_tokens = static_cast<int>(f.new_tokens);
        dice::bench::KernelSpan kernels(f.kernels);
        kernels.begin();
        auto run = run_once(lm, o, w, 2);
        if (!run.ok()) {
          std::fprintf(stderr, "rollout_bench: %s\n", run.status().to_string().c_str());
          return 1;
        }
        print_row(shape, batch, remasking, *run, o, options, cuda);
        std::fputs(kernels.end(run->seconds).c_str(), stdout);
      }
    }
  }
  return 0;
}
