// logprob_gap_bench: how far the sampler's log-probs (what a rollout worker records per token)
// are from the learner's log-probs of the same tokens under the same weights (what TraceRL's
// ratio compares them with). In exact arithmetic the two are equal and every ratio is 1; in bf16
// the sampler's decoding layout (KV cache, chunked blocks, CUDA graphs) and the learner's training
// layout (trace views of the whole sequence) round differently, and each ratio away from 1 is
// an off-policy error that the PPO clip may act on.
//
//   logprob_gap_bench [--models 1.7b,4b] [--samples 16] [--prompt 256] [--response 512]
//                     [--model-path DIR] [--device cuda|cpu] [--tiny]
//
// The sampler decodes random prompts with DICE's rollout settings (temperature 1, block 4, 4
// steps, low_confidence_dynamic, threshold 0.9) in bf16; the learner then scores every sample
// with the model in bf16 (the same weights) and in fp32 (the weights upcast). Reported per model
// and learner dtype: the mean and largest |log-prob difference| per token, the mean |ratio - 1|,
// and the share of tokens whose ratio lies outside the clip range [0.8, 1.2]. Random weights
// unless --model-path names a checkpoint (a trained policy's distributions are sharper).
#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "learner/train/policy_trainer.h"
#include "model/torch_compat.h"
#include "model/weights.h"
#include "rollout/sampler.h"
#include "tools/bench/sdar_shapes.h"

namespace {

struct Flags {
  std::vector<std::string> models = {"1.7b"};
  int samples = 16;
  int64_t prompt = 256, response = 512;
  std::string model_path;
  bool cpu = false, tiny = false;
};

bool parse(int argc, char** argv, Flags& f) {
  const bool ok = dice::bench::parse_flags(
      argc, argv, "logprob_gap_bench",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        if (flag == "--models") {
          f.models = dice::bench::split_list(value());
        } else if (flag == "--samples") {
          f.samples = std::stoi(value());
        } else if (flag == "--prompt") {
          f.prompt = std::stoll(value());
        } else if (flag == "--response") {
          f.response = std::stoll(value());
        } else if (flag == "--model-path") {
          f.model_path = value();
        } else if (flag == "--device") {
          const std::string d = value();
          if (d != "cuda" && d != "cpu") throw std::invalid_argument("cuda or cpu");
          f.cpu = d == "cpu";
        } else if (flag == "--tiny") {
          f.tiny = true;
        } else {
          throw std::invalid_argument("unknown flag");
        }
      });
  if (!ok) return false;
  if (f.samples < 1 || f.prompt < 1 || f.response < 1) {
    std::fprintf(stderr, "logprob_gap_bench: --samples, --prompt and --response must be >= 1\n");
    return false;
  }
  return true;
}

struct Gap {
  double mean_abs = 0, max_abs = 0, mean_ratio_error = 0, outside_clip = 0;
  int64_t tokens = 0;
};

// The learner's log-probs of `samples` against the sampler's.
Gap measure(dice::Qwen3LM model, const dice::ModelConfig& shape,
            const std::vector<dice::TraceSample>& samples) {
  dice::PolicyTrainerOptions o;
  o.layout.block_size = shape.block_size;
  o.layout.mask_token_id = shape.mask_token_id;
  auto trainer = dice::PolicyTrainer::create(model, o);
  if (!trainer.ok()) throw std::runtime_error(trainer.status().to_string());
  Gap gap;
  for (const dice::TraceSample& s : samples) {
    auto lp = (*trainer)->log_probs(s);
    if (!lp.ok()) throw std::runtime_error(lp.status().to_string());
    for (std::size_t t = 0; t < lp->size(); ++t) {
      const double d = static_cast<double>((*lp)[t]) - s.old_log_probs[t];
      const double ratio = std::exp(d);
      gap.mean_abs += std::abs(d);
      gap.max_abs = std::max(gap.max_abs, std::abs(d));
      gap.mean_ratio_error += std::abs(ratio - 1);
      gap.outside_clip += (ratio < 0.8 || ratio > 1.2) ? 1 : 0;
      ++gap.tokens;
    }
  }
  if (gap.tokens > 0) {
    gap.mean_abs /= gap.tokens;
    gap.mean_ratio_error /= gap.tokens;
    gap.outside_clip /= gap.tokens;
  }
  return gap;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  if (!parse(argc, argv, f)) return 2;
  if (!f.cpu && !dice::compat::cuda_available()) {
    std::printf("logprob_gap_bench: skipped: needs a CUDA GPU (or --device cpu); this is %s\n",
                dice::compat::describe_torch().c_str());
    return 0;
  }
  const c10::Device device = f.cpu ? c10::Device(at::kCPU) : c10::Device(at::kCUDA, 0);
  std::vector<dice::bench::NamedShape> shapes;
  if (f.tiny) {
    shapes.push_back(dice::bench::tiny_shape());
  } else if (!f.model_path.empty()) {
    shapes.push_back({f.model_path, {}});
  } else {
    for (const auto& s : dice::bench::sdar_shapes()) {
      for (const auto& m : f.models) {
        if (s.name == m) shapes.push_back(s);
      }
    }
  }
  std::printf(
      "logprob_gap_bench: %s, %d samples of %lld prompt + up to %lld response tokens, "
      "sampler in bf16\n",
      f.cpu ? "cpu" : "cuda:0", f.samples, static_cast<long long>(f.prompt),
      static_cast<long long>(f.response));
  std::printf("%-8s %-8s %8s %12s %12s %14s %14s\n", "model", "learner", "tokens", "mean|dlp|",
              "max|dlp|", "mean|ratio-1|", "outside clip");
  const auto bf16 = c10::TensorOptions().dtype(at::kBFloat16).device(device);
  int status = 0;
  for (const auto& shape : shapes) {
    try {
      at::manual_seed(1);
      dice::Qwen3LM model = nullptr;
      if (!f.model_path.empty()) {
        auto loaded = dice::load_qwen3_lm(f.model_path, bf16);
        if (!loaded.ok()) throw std::runtime_error(loaded.status().to_string());
        model = *loaded;
      } else {
        model = dice::Qwen3LM(shape.config, bf16);
      }
      const dice::ModelConfig config = model->config();
      dice::SamplerOptions so;  // DICE's rollout settings
      so.sampling.temperature = 1.0;
      so.sampling.block_size = static_cast<int>(config.block_size);
      so.sampling.denoising_steps = 4;
      so.sampling.remasking = dice::Remasking::LOW_CONFIDENCE_DYNAMIC;
      so.sampling.threshold = 0.9;
      so.sampling.max_new_tokens = static_cast<int>(f.response);
      so.sampling.stop_token_ids = {};
      so.mask_token_id = config.mask_token_id;
      so.max_batch = f.samples;
      so.max_sequence_length = f.prompt + f.response + 2 * config.block_size;
      so.seed = 5;
      auto sampler = dice::BlockDiffusionSampler::create(model, so);
      if (!sampler.ok()) throw std::runtime_error(sampler.status().to_string());
      std::mt19937_64 random(7);
      std::uniform_int_distribution<int64_t> token(0, config.mask_token_id - 1);
      std::vector<dice::GenerationRequest> requests(f.samples);
      for (int i = 0; i < f.samples; ++i) {
        requests[i].id = static_cast<uint64_t>(i + 1);
        for (int64_t t = 0; t < f.prompt; ++t) requests[i].prompt.push_back(token(random));
      }
      std::vector<dice::TraceSample> samples;
      {
        at::NoGradGuard no_grad;
        auto results = (*sampler)->generate(requests);
        if (!results.ok()) throw std::runtime_error(results.status().to_string());
        for (std::size_t i = 0; i < results->size(); ++i) {
          const dice::GenerationResult& g = (*results)[i];
          dice::TraceSample s;
          s.prompt = requests[i].prompt;
          s.response = g.tokens;
          s.unmask_steps = g.unmask_steps;
          s.old_log_probs = g.log_probs;
          s.tail = g.tail_tokens;
          s.tail_unmask_steps = g.tail_unmask_steps;
          samples.push_back(std::move(s));
        }
      }
      (*sampler).reset();  // frees its KV cache before the learner's forwards
      for (const char* dtype : {"bf16", "fp32"}) {
        if (std::string(dtype) == "fp32") model->to(at::kFloat);
        const Gap gap = measure(model, config, samples);
        std::printf("%-8s %-8s %8lld %12.5f %12.5f %14.5f %13.2f%%\n", shape.name.c_str(), dtype,
                    static_cast<long long>(gap.tokens), gap.mean_abs, gap.max_abs,
                    gap.mean_ratio_error, 100.0 * gap.outside_clip);
        std::fflush(stdout);
      }
    } catch (const std::exception& e) {
      std::printf("%-8s error: %s\n", shape.name.c_str(), e.what());
      status = 1;
    }
  }
  return status;
}
