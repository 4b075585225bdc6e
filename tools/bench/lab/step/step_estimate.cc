// step_estimate: the wall time of one DICE-sized RL step (64 tasks x 16 samples) on one node,
// broken into rollout, reward, update and weight push, from measured rates (step_estimate.h has
// the model), synchronous and asynchronous, and which stage bounds it (issue 22 item 4). With the
// defaults (4,096-token responses), the update bounds it: about an hour of a ~1.6 h step.
//
//   step_estimate [--tasks 64] [--group 16] [--prompt 512] [--response 4096]
//                 [--rollout-tok-s 8017] [--rollout-gpus 1] [--reward-per-min 29.4]
//                 [--candidate-latency-s 22.6] [--update-tok-s 1147] [--push-s 0]
//
// The defaults are the H200 node's measured rates in docs/BENCHMARKS.md: rollout at the
// SDAR-1.7B shape, batch 128, dynamic remasking (8,017 tok/s); the reward service cold, 16
// compile jobs and 8 GPU slots (29.4 candidates a minute; 19.4 s compile + 3.2 s evaluation p50
// for one candidate); the TraceRL update at 1.7B with the optimizer on the CPU (1,147 scored
// tokens/s; 1,759 with it on the GPU). The weight push (NCCL broadcast) is not measured yet: 0.
// Every input is a flag, so a new measurement gives a new estimate.
#include <cstdio>
#include <stdexcept>
#include <string>

#include "tools/bench/lab/step/step_estimate.h"
#include "tools/bench/sdar_shapes.h"

int main(int argc, char** argv) {
  dice::bench::StepRates r;
  r.rollout_tokens_per_s = 8017;
  r.reward_candidates_per_s = 29.4 / 60;
  r.candidate_latency_s = 22.6;
  r.update_tokens_per_s = 1147;
  int rollout_gpus = 1;
  const bool ok = dice::bench::parse_flags(
      argc, argv, "step_estimate",
      [&](const std::string& flag, const std::function<std::string()>& value) {
        if (flag == "--tasks") {
          r.tasks = std::stoi(value());
        } else if (flag == "--group") {
          r.group = std::stoi(value());
        } else if (flag == "--prompt") {
          r.prompt_tokens = std::stod(value());
        } else if (flag == "--response") {
          r.response_tokens = std::stod(value());
        } else if (flag == "--rollout-tok-s") {
          r.rollout_tokens_per_s = std::stod(value());
        } else if (flag == "--rollout-gpus") {
          rollout_gpus = std::stoi(value());
        } else if (flag == "--reward-per-min") {
          r.reward_candidates_per_s = std::stod(value()) / 60;
        } else if (flag == "--candidate-latency-s") {
          r.candidate_latency_s = std::stod(value());
        } else if (flag == "--update-tok-s") {
          r.update_tokens_per_s = std::stod(value());
        } else if (flag == "--push-s") {
          r.push_s = std::stod(value());
        } else {
          throw std::invalid_argument("unknown flag (see the header of step_estimate.cc)");
        }
      });
  if (!ok) return 2;
  if (r.tasks < 1 || r.group < 1 || r.prompt_tokens < 0 || r.response_tokens <= 0 ||
      r.rollout_tokens_per_s <= 0 || rollout_gpus < 1 || r.reward_candidates_per_s <= 0 ||
      r.candidate_latency_s < 0 || r.update_tokens_per_s <= 0 || r.push_s < 0) {
    std::fprintf(stderr,
                 "step_estimate: counts, --response and every rate must be positive; --prompt, "
                 "--candidate-latency-s and --push-s not negative\n");
    return 2;
  }
  r.rollout_tokens_per_s *= rollout_gpus;
  const dice::bench::StepEstimate e = dice::bench::estimate_step(r);
  const double samples = static_cast<double>(r.tasks) * r.group;
  std::printf("step_estimate: %d tasks x %d samples = %.0f, %.0f prompt + %.0f response tokens\n",
              r.tasks, r.group, samples, r.prompt_tokens, r.response_tokens);
  std::printf(
      "rates: rollout %.0f tok/s (%d GPU(s)), reward %.1f candidates/min (one %.1f s), "
      "update %.0f scored tok/s, push %.2f s\n",
      r.rollout_tokens_per_s, rollout_gpus, r.reward_candidates_per_s * 60, r.candidate_latency_s,
      r.update_tokens_per_s, r.push_s);
  std::printf("%-8s %10s %8s\n", "stage", "seconds", "share");
  const double serial = e.rollout_s + e.reward_s + e.update_s + e.push_s;
  for (const auto& [name, s] : {std::pair<const char*, double>{"rollout", e.rollout_s},
                                {"reward", e.reward_s},
                                {"update", e.update_s},
                                {"push", e.push_s}}) {
    std::printf("%-8s %10.0f %7.0f%%\n", name, s, 100.0 * s / serial);
  }
  std::printf("synchronous step:  %.0f s (%.1f h for DICE's 100 steps), bound by %s\n", e.sync_s,
              e.sync_s * 100 / 3600, e.sync_bound.c_str());
  std::printf("asynchronous step: %.0f s (%.1f h for 100 steps), bound by %s\n", e.async_s,
              e.async_s * 100 / 3600, e.async_bound.c_str());
  return 0;
}
