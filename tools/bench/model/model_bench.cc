// model_bench: forward throughput of dice's Qwen3 model on one CUDA GPU, with random bf16 weights
// at the shapes of SDAR-1.7B and SDAR-4B.
//
//   model_bench [--models 1.7b,4b] [--batches 1,16,64,128] [--context 256] [--iters 20]
//               [--warmup 3]
//
// For each model and batch size B:
//   prefill   B prompts of --context tokens stored into an empty KV cache (no logits);
//             tokens/s = B * context / time per forward.
//   decode    one block of 4 tokens per sequence against that cache, not stored (a denoising
//             step), with logits; tokens/s = B * 4 / time per forward.
// hf_bench.py measures transformers' Qwen3 forward on the same shapes for the peer figure.
// Without a CUDA device it prints why and exits 0 (nothing to measure).
#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <chrono>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "model/qwen3.h"
#include "model/torch_compat.h"
#include "tools/bench/sdar_shapes.h"

namespace {

using Shape = dice::bench::NamedShape;

std::vector<Shape> all_shapes() {
  return dice::bench::sdar_shapes();
}

using dice::bench::split_list;

// Waits for the GPU: reading one element back synchronizes the current stream.
void sync(const at::Tensor& t) {
  (void)t.reshape({-1})[0].item<float>();
}

template <typename F>
double seconds_per_call(F&& f, int warmup, int iters) {
  at::Tensor last;
  for (int i = 0; i < warmup; ++i) last = f();
  sync(last);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) last = f();
  sync(last);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / iters;
}

int usage(const std::string& message) {
  std::fprintf(stderr,
               "model_bench: %s\nusage: model_bench [--models 1.7b,4b] "
               "[--batches 1,16,64,128] [--context 256] [--iters 20] [--warmup 3]\n",
               message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string models = "1.7b,4b", batches = "1,16,64,128";
  int64_t context = 256;
  int iters = 20, warmup = 3;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) return usage("missing value for " + arg);
    std::string value = argv[++i];
    try {
      if (arg == "--models")
        models = value;
      else if (arg == "--batches")
        batches = value;
      else if (arg == "--context")
        context = std::stoll(value);
      else if (arg == "--iters")
        iters = std::stoi(value);
      else if (arg == "--warmup")
        warmup = std::stoi(value);
      else
        return usage("unknown argument " + arg);
    } catch (const std::exception&) {
      return usage(arg + ": not a number: " + value);
    }
  }
  if (context <= 0 || context % 4 != 0) return usage("--context must be a positive multiple of 4");
  if (iters <= 0 || warmup < 0) return usage("--iters must be > 0 and --warmup >= 0");
  if (!dice::compat::cuda_available()) {
    std::printf("model_bench: skipped: needs a CUDA GPU; this is %s\n",
                dice::compat::describe_torch().c_str());
    return 0;
  }
  std::vector<int64_t> batch_sizes;
  std::string bad;
  if (!dice::bench::parse_sizes(batches, &batch_sizes, &bad)) {
    return usage("--batches: not a positive integer: " + bad);
  }

  torch::NoGradGuard no_grad;
  const auto options = at::TensorOptions().dtype(at::kBFloat16).device(c10::kCUDA);
  std::printf("model_bench: %s; bf16 random weights, context %lld, block 4, %d iters\n",
              dice::compat::describe_torch().c_str(), static_cast<long long>(context), iters);
  std::printf("%-6s %6s %16s %12s %16s %12s\n", "model", "batch", "prefill tok/s", "prefill ms",
              "decode4 tok/s", "decode4 ms");
  for (const std::string& wanted : split_list(models)) {
    const Shape* shape = nullptr;
    static const std::vector<Shape> shapes = all_shapes();
    for (const Shape& s : shapes) {
      if (s.name == wanted) shape = &s;
    }
    if (shape == nullptr) return usage("unknown model " + wanted + " (1.7b or 4b)");
    dice::Qwen3LM lm(shape->config, options);
    for (int64_t batch : batch_sizes) {
      const int64_t block = shape->config.block_size;
      dice::KvCache cache(shape->config, batch, context + block, options);
      at::Tensor prompt = at::randint(0, 151643, {batch, context}, options.dtype(at::kLong));
      std::vector<int64_t> prompt_len(static_cast<size_t>(batch), context);
      const double prefill_s = seconds_per_call(
          [&] {
            for (int64_t b = 0; b < batch; ++b) cache.set_length(b, 0);
            lm->prefill(prompt, prompt_len, cache);
            return cache.keys(0);
          },
          warmup, iters);
      at::Tensor tokens = at::randint(0, 151643, {batch, block}, options.dtype(at::kLong));
      std::vector<int64_t> valid(static_cast<size_t>(batch), block);
      const double decode_s = seconds_per_call(
          [&] { return lm->forward_cached(tokens, valid, cache, /*store=*/false); }, warmup, iters);
      std::printf("%-6s %6lld %16.0f %12.2f %16.0f %12.2f\n", shape->name.c_str(),
                  static_cast<long long>(batch), batch * context / prefill_s, prefill_s * 1e3,
                  batch * block / decode_s, decode_s * 1e3);
      std::fflush(stdout);
    }
  }
  return 0;
}
