// decode_roofline: the H200's ceiling for block-diffusion decoding at SDAR shapes (issue 24
// item 1; decode_roofline.h has the count): per decode forward the bytes of weights and KV cache,
// the FLOPs, the floor time and whether memory or compute sets it, and the tokens/s that floor
// allows, static (block / denoising steps committed per row a forward) and at a given dynamic
// rate. Arithmetic only, no GPU.
//
//   decode_roofline [--models 1.7b,4b] [--batches 1,16,64,128] [--prompt 512] [--response 1024]
//                   [--steps 4] [--dynamic-per-row 2.0] [--peak-tflops 790] [--bandwidth-tbs 4.8]
//
// Context = prompt + half the response (the mean over a sequence's blocks).
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/bench/roofline/decode_roofline.h"
#include "tools/bench/sdar_shapes.h"

int main(int argc, char** argv) {
  std::vector<std::string> models = {"1.7b", "4b"};
  std::vector<int64_t> batches = {1, 16, 64, 128};
  int64_t prompt = 512, response = 1024, steps = 4;
  double dynamic_per_row = 2.0;
  dice::bench::HardwareLimits hw;
  const bool ok = dice::bench::parse_flags(
      argc, argv, "decode_roofline",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        std::string bad;
        if (flag == "--models") {
          models = dice::bench::split_list(value());
        } else if (flag == "--batches") {
          if (!dice::bench::parse_sizes(value(), &batches, &bad)) {
            throw std::invalid_argument("not a positive integer: " + bad);
          }
        } else if (flag == "--prompt") {
          prompt = std::stoll(value());
        } else if (flag == "--response") {
          response = std::stoll(value());
        } else if (flag == "--steps") {
          steps = std::stoll(value());
        } else if (flag == "--dynamic-per-row") {
          dynamic_per_row = std::stod(value());
        } else if (flag == "--peak-tflops") {
          hw.peak_flops = std::stod(value()) * 1e12;
        } else if (flag == "--bandwidth-tbs") {
          hw.bandwidth = std::stod(value()) * 1e12;
        } else {
          throw std::invalid_argument("unknown flag (see the header of decode_roofline.cc)");
        }
      });
  const std::vector<dice::bench::NamedShape> shapes = dice::bench::selected_shapes(models, false);
  if (!ok || shapes.empty() || prompt < 0 || response < 1 || steps < 1 || dynamic_per_row <= 0 ||
      hw.peak_flops <= 0 || hw.bandwidth <= 0) {
    if (ok) {
      std::fprintf(stderr,
                   "decode_roofline: --models names 1.7b or 4b; --response, --steps, "
                   "--dynamic-per-row and the limits must be positive\n");
    }
    return 2;
  }
  const int64_t context = prompt + response / 2;
  std::printf(
      "decode_roofline: context %lld (prompt %lld + half of %lld), %.0f TFLOP/s, "
      "%.1f TB/s\n",
      static_cast<long long>(context), static_cast<long long>(prompt),
      static_cast<long long>(response), hw.peak_flops / 1e12, hw.bandwidth / 1e12);
  std::printf("%-5s %6s %10s %8s %9s %9s %9s %-8s %14s %14s\n", "model", "batch", "weights GB",
              "KV GB", "GFLOP", "compute ms", "memory ms", "bound", "static tok/s",
              "dynamic tok/s");
  for (const auto& shape : shapes) {
    const double per_row_static =
        static_cast<double>(shape.config.block_size) / static_cast<double>(steps);
    for (int64_t batch : batches) {
      const auto s = dice::bench::decode_roofline(shape.config, batch, context, per_row_static, hw);
      const auto d =
          dice::bench::decode_roofline(shape.config, batch, context, dynamic_per_row, hw);
      std::printf("%-5s %6lld %10.2f %8.2f %9.0f %9.2f %9.2f %-8s %14.0f %14.0f\n",
                  shape.name.c_str(), static_cast<long long>(batch), s.weight_bytes / 1e9,
                  s.kv_bytes / 1e9, s.flops / 1e9, s.compute_s * 1e3, s.memory_s * 1e3,
                  s.memory_bound ? "memory" : "compute", s.ceiling_tok_s, d.ceiling_tok_s);
    }
  }
  return 0;
}
