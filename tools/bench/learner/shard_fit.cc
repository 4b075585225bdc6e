// shard_fit: what each of the learner's GPUs holds of the model at DICE's settings (bf16 weights
// and gradients, fp32 master weights and AdamW's two fp32 moments), for the SDAR shapes on 1, 2,
// 4 and 8 GPUs under each learner.data_parallel.shard mode, and whether it fits an 80 GB H100 and
// a 141 GB H200 (issue 53 item 4). Arithmetic only (learner/parallel/shard_memory.h), no GPU.
//
//   shard_fit [--models 1.7b,4b,8b] [--gpus 1,2,4,8] [--reserve-gib 0] [--configs DIR]
//
// The shapes are configs/models/sdar-<model>.yaml (DIR: the source tree's configs/ by default) and
// the parameter counts come from them. weights..moments and "step" are a GPU's state during an
// update (under parameters: the layers' chunks and one layer whole); "gpu0" is GPU 0's between
// updates (under parameters it holds every layer whole again; the same as "step" otherwise);
// "peak" the larger. Not counted: activations (no estimate of the training forward's exists in
// the code; update_bench measures the peak; they add to "step" only), the CUDA context, NCCL's
// buffers and the caching allocator's slack. "left" is the card's memory less the peak: what
// remains for all of those; a row fits a card when left >= --reserve-gib (default 0: the model
// state alone fits).
#include <cstdio>
#include <string>
#include <vector>

#include "learner/parallel/shard_memory.h"
#include "options/dice_config.h"
#include "tools/bench/sdar_shapes.h"

namespace {

// A card's memory as nvidia-smi reports it (memory.total): the H100 SXM 80 GB and the H200.
struct Card {
  const char* name;
  double mib;
};
constexpr Card kCards[] = {{"H100 80GB", 81559}, {"H200 141GB", 143771}};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models = {"1.7b", "4b", "8b"};
  std::vector<int64_t> gpus;
  std::string configs = DICE_CONFIGS_DIR;
  double reserve_gib = 0;
  const bool ok = dice::bench::parse_flags(
      argc, argv, "shard_fit",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        std::string bad;
        if (flag == "--models") {
          models = dice::bench::split_list(value());
        } else if (flag == "--gpus") {
          if (!dice::bench::parse_sizes(value(), &gpus, &bad)) {
            throw std::invalid_argument("not a positive integer: " + bad);
          }
        } else if (flag == "--reserve-gib") {
          reserve_gib = std::stod(value());
          if (reserve_gib < 0) throw std::invalid_argument("negative");
        } else if (flag == "--configs") {
          configs = value();
        } else {
          throw std::invalid_argument("unknown flag (see the header of shard_fit.cc)");
        }
      });
  if (!ok) return 2;
  if (gpus.empty()) gpus = {1, 2, 4, 8};

  std::printf(
      "shard_fit: GiB per GPU, bf16 weights, before activations; left = card - peak; fits: "
      "left >= %.1f GiB\n",
      reserve_gib);
  std::printf("%-5s %14s %4s %-10s %7s %7s %7s %7s %7s %7s %7s", "model", "parameters", "gpus",
              "shard", "weights", "grads", "masters", "moments", "step", "gpu0", "peak");
  for (const Card& card : kCards) std::printf(" %10s %4s", card.name, "fits");
  std::printf("\n");
  for (const std::string& model : models) {
    const std::string path = configs + "/models/sdar-" + model + ".yaml";
    dice::Result<dice::ModelShape> shape = dice::load_model_shape(path);
    if (!shape.ok()) {
      std::fprintf(stderr, "shard_fit: --models %s: %s\n", model.c_str(),
                   shape.status().to_string().c_str());
      return 2;
    }
    const double parameters = dice::model_parameters(*shape);
    for (int64_t n : gpus) {
      for (const auto& mode : dice::kShardModeNames) {
        const dice::GpuState state = dice::gpu_state(*shape, mode.value, static_cast<int>(n));
        const dice::ParameterBytes& b = state.step;
        const double peak = state.peak() / kGiB;
        std::printf("%-5s %14.0f %4lld %-10s %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f %7.1f",
                    model.c_str(), parameters, static_cast<long long>(n), mode.name,
                    b.weights / kGiB, b.gradients / kGiB, b.masters / kGiB, b.moments / kGiB,
                    b.total() / kGiB, state.between.total() / kGiB, peak);
        for (const Card& card : kCards) {
          const double left = card.mib / 1024.0 - peak;
          std::printf(" %10.1f %4s", left, left >= reserve_gib ? "yes" : "no");
        }
        std::printf("\n");
      }
    }
  }
  std::printf("not counted: activations, CUDA context, NCCL buffers, allocator slack\n");
  return 0;
}
