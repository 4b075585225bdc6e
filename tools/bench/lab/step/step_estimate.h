// The wall time of one RL step from stage rates (step_estimate.cc prints it): how long rollout,
// reward, the update and the weight push take for a step of `tasks` x `group` samples, and
// which of them bounds the step, synchronous and asynchronous.
//
//   rollout   samples x (prompt + mean response) tokens at the rollout's generated tokens/s over
//             all its GPUs (the prompt's prefill counted as generated tokens: an upper bound)
//   reward    samples / the reward service's candidates per second (compile + run, every slot)
//   update    samples x mean response tokens at the update's scored tokens/s
//   push      the weight broadcast's seconds
//
// Synchronous (DICE): reward judges each group as it arrives, so rollout and reward overlap;
// the step is max(rollout + the last candidate's latency, reward) + update + push. Asynchronous
// with max_ahead >= 1 (docs/ASYNC.md), in a steady state: each stage works on another step, so
// the step is the slowest stage, max(rollout, reward, update + push).
#pragma once

#include <algorithm>
#include <string>

namespace dice::bench {

struct StepRates {
  int tasks = 64, group = 16;
  double prompt_tokens = 512, response_tokens = 4096;  // response: the mean, <= the cap
  double rollout_tokens_per_s = 0;                     // all rollout GPUs together
  double reward_candidates_per_s = 0;                  // the whole reward service
  double candidate_latency_s = 0;                      // one candidate: compile + evaluation
  double update_tokens_per_s = 0;                      // scored (response) tokens
  double push_s = 0;
};

struct StepEstimate {
  double rollout_s = 0, reward_s = 0, update_s = 0, push_s = 0;
  double sync_s = 0, async_s = 0;
  std::string sync_bound, async_bound;  // "rollout", "reward" or "update"
};

inline StepEstimate estimate_step(const StepRates& r) {
  StepEstimate e;
  const double samples = static_cast<double>(r.tasks) * r.group;
  e.rollout_s = samples * (r.prompt_tokens + r.response_tokens) / r.rollout_tokens_per_s;
  e.reward_s = samples / r.reward_candidates_per_s;
  e.update_s = samples * r.response_tokens / r.update_tokens_per_s;
  e.push_s = r.push_s;
  const double judged = std::max(e.rollout_s + r.candidate_latency_s, e.reward_s);
  e.sync_s = judged + e.update_s + e.push_s;
  const double learn = e.update_s + e.push_s;
  e.async_s = std::max({e.rollout_s, e.reward_s, learn});
  // Synchronous: the largest of the three serial parts bounds the step.
  if (learn >= judged) {
    e.sync_bound = "update";
  } else {
    e.sync_bound = e.reward_s >= e.rollout_s + r.candidate_latency_s ? "reward" : "rollout";
  }
  e.async_bound = e.async_s == e.rollout_s  ? "rollout"
                  : e.async_s == e.reward_s ? "reward"
                                            : "update";
  return e;
}

}  // namespace dice::bench
