// kv_fit: how many sequences a rollout worker decodes at once on one GPU (issue 24 item 3): the
// rule dice-rollout applies at start (rollout/kv_slot_budget.h), at the SDAR shapes, for answer
// lengths and for the memory a learner on the same GPU holds. Arithmetic only, no GPU.
//
//   kv_fit [--models 1.7b,4b] [--total-gib 140] [--prompt 512] [--responses 1024,4096,8192]
//          [--learner-gib 0,40,80] [--max-batch 512]
//
// Each row: max_sequence_length = prompt + response + one block; the worker alone takes
// gpu_memory_fraction 0.9; beside a learner holding L GiB it takes what the learner leaves, less
// 5 % (fraction = 0.95 (total - L) / total), and the GPU's free memory at its start is the total
// less the learner and its own weights. --max-batch is the ceiling (rollout.max_batch).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "rollout/kv_slot_budget.h"
#include "tools/bench/roofline/decode_roofline.h"
#include "tools/bench/sdar_shapes.h"

int main(int argc, char** argv) {
  std::vector<std::string> models = {"1.7b", "4b"};
  std::vector<int64_t> responses = {1024, 4096, 8192}, learner_gib = {0, 40, 80};
  int64_t prompt = 512, max_batch = 512;
  double total_gib = 140;
  const bool ok = dice::bench::parse_flags(
      argc, argv, "kv_fit",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        std::string bad;
        if (flag == "--models") {
          models = dice::bench::split_list(value());
        } else if (flag == "--responses") {
          if (!dice::bench::parse_sizes(value(), &responses, &bad)) {
            throw std::invalid_argument("not a positive integer: " + bad);
          }
        } else if (flag == "--learner-gib") {  // 0: the worker alone on its GPU
          learner_gib.clear();
          for (const std::string& gib : dice::bench::split_list(value())) {
            learner_gib.push_back(std::stoll(gib));
            if (learner_gib.back() < 0) throw std::invalid_argument("negative: " + gib);
          }
        } else if (flag == "--total-gib") {
          total_gib = std::stod(value());
        } else if (flag == "--prompt") {
          prompt = std::stoll(value());
        } else if (flag == "--max-batch") {
          max_batch = std::stoll(value());
        } else {
          throw std::invalid_argument("unknown flag (see the header of kv_fit.cc)");
        }
      });
  const std::vector<dice::bench::NamedShape> shapes = dice::bench::selected_shapes(models, false);
  if (!ok || shapes.empty() || total_gib <= 0 || prompt < 0 || max_batch < 1) {
    if (ok) {
      std::fprintf(stderr,
                   "kv_fit: --models names 1.7b or 4b; --total-gib and --max-batch must be "
                   "positive\n");
    }
    return 2;
  }
  const double gib = static_cast<double>(1ull << 30);
  const auto total = static_cast<std::uint64_t>(total_gib * gib);
  std::printf("kv_fit: a %.0f GiB GPU, prompt %lld, max_batch %lld\n", total_gib,
              static_cast<long long>(prompt), static_cast<long long>(max_batch));
  std::printf("%-5s %9s %10s %11s %9s %11s %8s %12s\n", "model", "response", "max_seq",
              "learner GiB", "fraction", "weights GiB", "slots", "KV MiB/slot");
  int status = 0;
  for (const auto& shape : shapes) {
    const double weights_params = dice::bench::decoder_weights(shape.config) +
                                  static_cast<double>(shape.config.vocab_size) *
                                      static_cast<double>(shape.config.hidden_size) *
                                      (shape.config.tie_word_embeddings ? 1.0 : 2.0);
    const auto weights = static_cast<std::uint64_t>(2.0 * weights_params);  // bf16
    for (int64_t response : responses) {
      for (int64_t learner : learner_gib) {
        dice::SlotBudgetInput in;
        in.model = shape.config;
        in.max_sequence_length = prompt + response + shape.config.block_size;
        in.max_prefill_tokens = 16384;  // SamplerOptions' default
        in.max_batch = static_cast<int>(max_batch);
        const double learner_bytes = static_cast<double>(learner) * gib;
        in.gpu_memory_fraction =
            learner == 0 ? 0.9 : 0.95 * (static_cast<double>(total) - learner_bytes) / total;
        in.total_bytes = total;
        in.weights_bytes = weights;
        const double free_bytes = static_cast<double>(total) - learner_bytes - weights;
        in.free_bytes = free_bytes > 0 ? static_cast<std::uint64_t>(free_bytes) : 0;
        auto budget = dice::kv_slot_budget(in);
        char slots[32];
        if (budget.ok()) {
          std::snprintf(slots, sizeof slots, "%d", budget->slots);
        } else {
          std::snprintf(slots, sizeof slots, "none");
        }
        std::printf("%-5s %9lld %10lld %11lld %9.2f %11.1f %8s %12.0f\n", shape.name.c_str(),
                    static_cast<long long>(response),
                    static_cast<long long>(in.max_sequence_length), static_cast<long long>(learner),
                    in.gpu_memory_fraction, weights / gib, slots,
                    static_cast<double>(dice::kv_bytes_per_token(shape.config, 2) *
                                        static_cast<std::uint64_t>(in.max_sequence_length)) /
                        (1 << 20));
        if (in.gpu_memory_fraction <= 0) status = 1;
      }
    }
  }
  return status;
}
