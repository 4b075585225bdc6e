// PolicyTrainer on a tiny random model (CPU). The strongest check is the first: the trace views
// score every token of a real sampler run with exactly the log-prob the sampler recorded, so the
// TraceRL ratio starts at 1 (the views rebuild the sampler's context token for token).
#include "learner/train/policy_trainer.h"

#include <ATen/ATen.h>
#include <c10/core/CPUAllocator.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "learner/train/out_of_memory.h"
#include "model/torch_compat.h"
#include "rollout/sampler.h"
#include "tests/learner/train/policy_trainer_test_util.h"
#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

SamplerOptions sampling(Remasking remasking, double temperature = 1.0) {
  SamplerOptions o;
  o.sampling.temperature = temperature;
  o.sampling.block_size = 4;
  o.sampling.denoising_steps = 4;
  o.sampling.remasking = remasking;
  o.sampling.threshold = 0.3;
  o.sampling.max_new_tokens = 14;
  o.sampling.stop_token_ids = {};
  o.mask_token_id = tiny_config().mask_token_id;
  o.max_batch = 4;
  o.max_sequence_length = 64;
  o.seed = 11;
  return o;
}

PolicyTrainerOptions trainer_options() {
  return testing_util::tiny_trainer_options();
}

// Samples with traces from the real sampler, as a rollout worker would send them: one per entry
// of `new_tokens` (by default 10, 11, 12: the last block cut short or not), prompts in turn, drawn
// at `temperature` (top-k and top-p off), which each sample carries as the learner's step
// tracker sets it.
std::vector<TraceSample> sample_traces(Qwen3LM model, Remasking remasking,
                                       const std::vector<int>& new_tokens = {10, 11, 12},
                                       double temperature = 1.0) {
  torch::NoGradGuard no_grad;
  const std::vector<std::vector<int64_t>> all_prompts = {
      {1, 2, 3}, {4, 5, 6, 7, 8}, {9, 10, 11, 12}};
  std::vector<std::vector<int64_t>> prompts;
  std::vector<GenerationRequest> requests;
  for (std::size_t i = 0; i < new_tokens.size(); ++i) {
    prompts.push_back(all_prompts[i % all_prompts.size()]);
    GenerationRequest r;
    r.id = i + 1;
    r.prompt = prompts.back();
    r.max_new_tokens = new_tokens[i];
    requests.push_back(r);
  }
  auto sampler = BlockDiffusionSampler::create(model, sampling(remasking, temperature));
  EXPECT_TRUE(sampler.ok()) << sampler.status().to_string();
  auto results = (*sampler)->generate(requests);
  EXPECT_TRUE(results.ok()) << results.status().to_string();
  std::vector<TraceSample> out;
  for (std::size_t i = 0; i < results->size(); ++i) {
    const GenerationResult& g = (*results)[i];
    TraceSample s;
    s.prompt = prompts[i];
    s.response = g.tokens;
    s.unmask_steps = g.unmask_steps;
    s.old_log_probs = g.log_probs;
    s.tail = g.tail_tokens;
    s.tail_unmask_steps = g.tail_unmask_steps;
    s.temperature = temperature;
    out.push_back(std::move(s));
  }
  return out;
}

TEST(PolicyTrainerTest, TraceViewsReproduceTheSamplersLogProbs) {
  // DICE's low-confidence strategies at temperature 1, and the faithful ones (remasking.h) at
  // 1.3: each sample is scored at the temperature it was drawn at (TraceSample::temperature).
  struct Case {
    Remasking remasking;
    double temperature;
  };
  for (Case c :
       {Case{Remasking::LOW_CONFIDENCE_STATIC, 1.0}, Case{Remasking::LOW_CONFIDENCE_DYNAMIC, 1.0},
        Case{Remasking::RANDOM, 1.3}, Case{Remasking::ENTROPY_BOUNDED, 1.3}}) {
    SCOPED_TRACE("remasking " + std::to_string(static_cast<int>(c.remasking)) + " temperature " +
                 std::to_string(c.temperature));
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples =
        sample_traces(model, c.remasking, {10, 11, 12}, c.temperature);
    // Responses of 10 and 11 tokens end inside their final block: those carry a tail.
    EXPECT_FALSE(samples[0].tail.empty());
    auto trainer = PolicyTrainer::create(model, trainer_options());
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    for (const TraceSample& s : samples) {
      auto lp = (*trainer)->log_probs(s);
      ASSERT_TRUE(lp.ok()) << lp.status().to_string();
      ASSERT_EQ(lp->size(), s.old_log_probs.size());
      for (std::size_t t = 0; t < lp->size(); ++t) {
        EXPECT_NEAR((*lp)[t], s.old_log_probs[t], 2e-5)
            << "token " << t << " (unmasked at step " << s.unmask_steps[t] << ")";
      }
    }
    // The same holds inside update(): ratio 1, no clipping, KL 0; zero advantages leave the
    // loss at 0.
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    EXPECT_EQ(stats->sequences, 3);
    EXPECT_EQ(stats->scored_tokens, 10 + 11 + 12);
    EXPECT_EQ(stats->forwards, 2);  // grad_accumulation 2: micro-batches of 2 and 1
    EXPECT_NEAR(stats->mean_ratio, 1.0, 1e-5);
    EXPECT_LT(stats->kl, 1e-9);
    EXPECT_EQ(stats->clip_fraction, 0.0);
    EXPECT_NEAR(stats->loss, 0.0, 1e-9);
  }
}

TEST(PolicyTrainerTest, SamplesScoredAtAnotherTemperatureThanTheirsAreOffPolicy) {
  // Drawn at 1.3 but scored at 1 (a learner that ignored the phase's temperature): the log-probs
  // are not the sampler's, and the first update's ratio does not start at 1.
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::RANDOM, {10, 11, 12}, 1.3);
  for (TraceSample& s : samples) s.temperature = 1.0;
  auto trainer = PolicyTrainer::create(model, trainer_options());
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  double largest = 0;
  for (const TraceSample& s : samples) {
    auto lp = (*trainer)->log_probs(s);
    ASSERT_TRUE(lp.ok()) << lp.status().to_string();
    for (std::size_t t = 0; t < lp->size(); ++t) {
      largest = std::max(largest, std::abs(static_cast<double>((*lp)[t] - s.old_log_probs[t])));
    }
  }
  EXPECT_GT(largest, 0.1);  // 0.59 with this seed
  auto stats = (*trainer)->update(samples);
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_GT(stats->kl, 1e-3);  // 0.03
}

TEST(PolicyTrainerTest, LogProbsOfSeveralSamplesAForwardAreEachSamplesOwn) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_DYNAMIC);
  TraceSample bad = samples[1];
  bad.unmask_steps.push_back(0);  // a trace that does not fit its response
  TraceSample empty = samples[2];
  empty.response.clear();
  empty.unmask_steps.clear();
  empty.old_log_probs.clear();
  empty.tail.clear();
  empty.tail_unmask_steps.clear();
  samples.insert(samples.begin() + 1, bad);
  samples.push_back(empty);  // a good one, bad, two good, empty
  auto trainer = PolicyTrainer::create(model, trainer_options());
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
  for (std::int64_t per_forward : {1, 2, 3, 5}) {
    SCOPED_TRACE("per forward " + std::to_string(per_forward));
    auto together = (*trainer)->log_probs(samples, per_forward);
    ASSERT_EQ(together.size(), samples.size());
    EXPECT_EQ(together[1].status().code(), StatusCode::kInvalidArgument);
    ASSERT_TRUE(together[4].ok());
    EXPECT_TRUE(together[4]->empty());
    for (std::size_t i : {0u, 2u, 3u}) {
      ASSERT_TRUE(together[i].ok()) << together[i].status().to_string();
      // Padded beside longer rows or not, each sample scores as it does alone and as sampled.
      auto alone_or = (*trainer)->log_probs(samples[i]);
      ASSERT_TRUE(alone_or.ok()) << alone_or.status().to_string();
      const std::vector<float>& alone = *alone_or;
      ASSERT_EQ(together[i]->size(), alone.size());
      for (std::size_t t = 0; t < alone.size(); ++t) {
        EXPECT_NEAR((*together[i])[t], alone[t], 1e-5) << "sample " << i << " token " << t;
        EXPECT_NEAR((*together[i])[t], samples[i].old_log_probs[t], 2e-5);
      }
    }
  }
}

TEST(PolicyTrainerTest, MicroBatchesGroupTheLongestSamplesTogether) {
  // Long, short, long, short: in order, each of two micro-batches would pad a short sample to a
  // long one's length; longest first, the two long ones share a forward and so do the short.
  Qwen3LM model = random_lm(tiny_config(), 3);
  const std::vector<TraceSample> samples =
      sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC, {25, 3, 24, 5});
  std::vector<std::int64_t> length;
  for (const TraceSample& s : samples) {
    auto layout = trace_layout(s, trainer_options().layout);
    ASSERT_TRUE(layout.ok()) << layout.status().to_string();
    length.push_back(static_cast<std::int64_t>(layout->clean.size()));
  }
  ASSERT_GT(length[0], length[1]);
  ASSERT_EQ(length[0], length[2]);
  ASSERT_EQ(length[1], length[3]);
  auto trainer = PolicyTrainer::create(model, trainer_options());  // grad_accumulation 2
  ASSERT_TRUE(trainer.ok());
  auto stats = (*trainer)->update(samples);
  ASSERT_TRUE(stats.ok()) << stats.status().to_string();
  EXPECT_EQ(stats->forwards, 2);
  // Grouped {long, long} and {short, short}, no row is padded.
  EXPECT_EQ(stats->padding_fraction, 0.0);
  // Three samples, grouped {long, long} and {short}: still none; the update is the same sum
  // whatever the grouping (the equality tests below compare updates across layouts).
  auto three = (*trainer)->update({samples[1], samples[0], samples[2]});
  ASSERT_TRUE(three.ok());
  EXPECT_EQ(three->padding_fraction, 0.0);
  // One forward for all four: the short rows pad to the long length.
  PolicyTrainerOptions one = trainer_options();
  one.optimizer.grad_accumulation = 1;
  auto single = PolicyTrainer::create(random_lm(tiny_config(), 3), one);
  ASSERT_TRUE(single.ok());
  auto padded = (*single)->update(samples);
  ASSERT_TRUE(padded.ok());
  EXPECT_GT(padded->padding_fraction, 0.1);
  EXPECT_LT(padded->padding_fraction, 0.5);
}

double mean(const std::vector<float>& v) {
  double sum = 0;
  for (float x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

TEST(PolicyTrainerTest, AnUpdateMovesProbabilityTowardsPositiveAdvantages) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
  samples[0].advantage = 1.0;
  samples[1].advantage = -1.0;
  samples[2].advantage = 0.0;
  PolicyTrainerOptions o = trainer_options();
  o.optimizer.lr = 3e-3;
  o.loss.kl_beta = 0.0;
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok());
  std::vector<double> before;
  for (const TraceSample& s : samples) before.push_back(mean(*(*trainer)->log_probs(s)));
  PolicyUpdateStats last;
  for (int step = 0; step < 3; ++step) {
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    // Later steps may clip every token (ratios past 1 +- eps in the advantage's direction).
    if (step == 0) {
      EXPECT_GT(stats->grad_norm, 0.0);
    }
    EXPECT_TRUE(std::isfinite(stats->loss));
    last = *stats;
  }
  EXPECT_EQ((*trainer)->steps_taken(), 3);
  // After the first step the sampling log-probs are stale: the ratio moved off 1.
  EXPECT_GT(std::abs(last.mean_ratio - 1.0), 1e-4);
  const double up = mean(*(*trainer)->log_probs(samples[0])) - before[0];
  const double down = mean(*(*trainer)->log_probs(samples[1])) - before[1];
  EXPECT_GT(up, 0.0) << "positive advantage: its tokens should become more likely";
  EXPECT_LT(down, 0.0) << "negative advantage: its tokens should become less likely";
}

TEST(PolicyTrainerTest, ClippedRatiosStopTheGradient) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
  // Old log-probs far below the policy's: every ratio is e^5 > 1 + eps, and with a positive
  // advantage the clipped branch (constant) is the minimum: no gradient at all.
  for (TraceSample& s : samples) {
    for (float& lp : s.old_log_probs) lp -= 5.0f;
    s.advantage = 1.0;
  }
  PolicyTrainerOptions o = trainer_options();
  o.loss.kl_beta = 0.0;
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok());
  auto stats = (*trainer)->update(samples);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->clip_fraction, 1.0);
  EXPECT_EQ(stats->grad_norm, 0.0);
  EXPECT_NEAR(stats->policy_loss, -(1.0 + o.loss.clip_eps), 1e-5);  // -(1+eps) * A per token
}

TEST(PolicyTrainerTest, Bf16ModelTrainsThroughFloat32MasterWeights) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
  samples[0].advantage = 1.0;
  samples[1].advantage = -1.0;
  model->to(at::kBFloat16);
  const at::Tensor before = model->lm_head.detach().clone();
  PolicyTrainerOptions o = trainer_options();
  o.optimizer.lr = 1e-6;  // DICE's lr: a bf16-only AdamW would lose most of these updates
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok());
  for (int step = 0; step < 20; ++step) {
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    ASSERT_TRUE(std::isfinite(stats->loss));
  }
  EXPECT_EQ(model->lm_head.scalar_type(), at::kBFloat16);
  // 20 steps of ~1e-6 each add up in float32 and then show in the rounded bf16 weights.
  EXPECT_GT(
      (model->lm_head.detach().to(at::kFloat) - before.to(at::kFloat)).abs().max().item<double>(),
      0.0);
}

TEST(PolicyTrainerTest, OptimizerOnTheCpuStepsTheSameAsOnTheModelsDevice) {
  // A bf16 model: masters are separate either way; with optimizer_on_cpu they are host tensors.
  // The update must not depend on where they live.
  std::vector<at::Tensor> after;
  for (bool on_cpu : {false, true}) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
    samples[0].advantage = 1.0;
    samples[1].advantage = -1.0;
    model->to(at::kBFloat16);
    PolicyTrainerOptions o = trainer_options();
    o.optimizer.lr = 1e-2;
    o.optimizer_on_cpu = on_cpu;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    ASSERT_TRUE((*trainer)->update(samples).ok());
    after.push_back(model->lm_head.detach().to(at::kFloat));
  }
  EXPECT_TRUE(at::equal(after[0], after[1]));
}

// loss.ppo_epochs passes are that many optimizer steps against the same sampling log-probs:
// the weights equal those of as many update() calls on the same samples, and the reported
// figures are the last pass's (its ratio off 1: the earlier passes moved the policy).
TEST(PolicyTrainerTest, PpoEpochsAreOptimizerStepsOnTheSameSamples) {
  std::vector<at::Tensor> after;
  PolicyUpdateStats epochs_stats, last_call;
  for (int epochs : {3, 1}) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
    samples[0].advantage = 1.0;
    samples[1].advantage = -1.0;
    PolicyTrainerOptions o = trainer_options();
    o.optimizer.lr = 3e-3;
    o.loss.ppo_epochs = epochs;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    for (int call = 0; call < 3 / epochs; ++call) {
      auto stats = (*trainer)->update(samples);
      ASSERT_TRUE(stats.ok()) << stats.status().to_string();
      EXPECT_EQ(stats->optimizer_steps, epochs);
      (epochs == 3 ? epochs_stats : last_call) = *stats;
    }
    EXPECT_EQ((*trainer)->steps_taken(), 3);
    after.push_back(model->lm_head.detach().to(at::kFloat));
  }
  EXPECT_TRUE(at::allclose(after[0], after[1], 1e-6, 1e-7));
  EXPECT_GT(std::abs(epochs_stats.mean_ratio - 1.0), 1e-4);
  EXPECT_NEAR(epochs_stats.mean_ratio, last_call.mean_ratio, 1e-6);
  EXPECT_NEAR(epochs_stats.loss, last_call.loss, 1e-6);
  EXPECT_EQ(epochs_stats.forwards, 2);  // one pass's micro-batches
}

// ppo_mini_batches 2: each epoch is two optimizer steps, one per half of the samples (in order),
// each half its own objective: the same weights as two update() calls on the halves.
TEST(PolicyTrainerTest, MiniBatchesAreOptimizerStepsOnPartsInOrder) {
  std::vector<at::Tensor> after;
  for (int mini_batches : {2, 1}) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
    samples[0].advantage = 1.0;
    samples[1].advantage = -1.0;
    samples[2].advantage = 0.5;
    PolicyTrainerOptions o = trainer_options();
    o.optimizer.lr = 3e-3;
    o.loss.ppo_mini_batches = mini_batches;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    if (mini_batches == 2) {
      auto stats = (*trainer)->update(samples);
      ASSERT_TRUE(stats.ok()) << stats.status().to_string();
      EXPECT_EQ(stats->optimizer_steps, 2);
      EXPECT_EQ(stats->sequences, 3);
      EXPECT_EQ(stats->scored_tokens, 10 + 11 + 12);
    } else {  // the parts by hand: samples 0-1, then 2
      ASSERT_TRUE((*trainer)->update({samples[0], samples[1]}).ok());
      ASSERT_TRUE((*trainer)->update({samples[2]}).ok());
    }
    EXPECT_EQ((*trainer)->steps_taken(), 2);
    after.push_back(model->lm_head.detach().to(at::kFloat));
  }
  EXPECT_TRUE(at::allclose(after[0], after[1], 1e-6, 1e-7));
}

// recompute_old_log_probs: sampling log-probs that are far off (as a drifting sampler's would be)
// are replaced by the learner's own, so the first pass is on-policy: ratio 1, nothing clipped.
TEST(PolicyTrainerTest, RecomputedOldLogProbsPutTheFirstPassOnPolicy) {
  for (bool recompute : {false, true}) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
    for (TraceSample& s : samples) {
      for (float& lp : s.old_log_probs) lp -= 1.0f;  // ratios of e = 2.7: all clipped
    }
    samples[0].advantage = 1.0;
    samples[1].advantage = -1.0;
    PolicyTrainerOptions o = trainer_options();
    o.loss.recompute_old_log_probs = recompute;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    if (recompute) {
      EXPECT_NEAR(stats->mean_ratio, 1.0, 1e-5);
      EXPECT_EQ(stats->clip_fraction, 0.0);
      EXPECT_LT(stats->kl, 1e-9);
    } else {
      EXPECT_NEAR(stats->mean_ratio, std::exp(1.0), 1e-3);
      EXPECT_EQ(stats->clip_fraction, 1.0);
    }
  }
}

// learner.async.stale importance (decoupled PPO): the ratio is against the learner's own
// log-probs (so it is 1 and nothing is clipped on the first pass) and each token's term is
// weighted by min(pi_learner / pi_sampler, cap). At ratio 1 the k3 KL is 0 and a sequence's
// objective is -advantage x weight, so the loss is the weighted mean of -advantage.
TEST(PolicyTrainerTest, ImportanceWeightsAreTheTruncatedRatioOfLearnerToSampler) {
  struct Case {
    float shift;  // added to the sampler's log-probs
    double cap;
    double weight;  // min(exp(-shift), cap)
    double capped;  // share of tokens the cap cut
  };
  const Case cases[] = {
      {0.5f, 1.0, std::exp(-0.5), 0.0}, {-0.5f, 1.0, 1.0, 1.0}, {-0.5f, 2.0, std::exp(0.5), 0.0}};
  for (const Case& c : cases) {
    SCOPED_TRACE("shift " + std::to_string(c.shift) + " cap " + std::to_string(c.cap));
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
    ASSERT_EQ(samples.size(), 3u);
    for (TraceSample& s : samples) {
      for (float& lp : s.old_log_probs) lp += c.shift;
    }
    samples[0].advantage = 1.0;
    samples[1].advantage = 0.5;
    samples[2].advantage = 0.0;
    PolicyTrainerOptions o = trainer_options();
    o.importance_cap = c.cap;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    EXPECT_NEAR(stats->mean_ratio, 1.0, 1e-4);
    EXPECT_EQ(stats->clip_fraction, 0.0);
    EXPECT_NEAR(stats->importance_mean, c.weight, 1e-4);
    EXPECT_NEAR(stats->importance_capped, c.capped, 1e-9);
    EXPECT_NEAR(stats->loss, -(1.0 + 0.5 + 0.0) / 3.0 * c.weight, 1e-4);
  }
}

// Model FLOPs add up over passes (a second epoch doubles them; recomputed log-probs add one
// forward), and the parts are timed only when asked.
TEST(PolicyTrainerTest, ModelFlopsCountEveryPassAndTimedPartsOnlyWhenAsked) {
  auto flops_of = [](int epochs, bool recompute, bool timed, PolicyUpdateStats* out) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
    samples[0].advantage = 1.0;
    samples[1].advantage = -1.0;
    PolicyTrainerOptions o = trainer_options();
    o.loss.ppo_epochs = epochs;
    o.loss.recompute_old_log_probs = recompute;
    o.time_parts = timed;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    auto stats = (*trainer)->update(samples);
    ASSERT_TRUE(stats.ok()) << stats.status().to_string();
    *out = *stats;
  };
  PolicyUpdateStats one, two, rescored, timed;
  ASSERT_NO_FATAL_FAILURE(flops_of(1, false, false, &one));
  ASSERT_NO_FATAL_FAILURE(flops_of(2, false, false, &two));
  ASSERT_NO_FATAL_FAILURE(flops_of(1, true, false, &rescored));
  ASSERT_NO_FATAL_FAILURE(flops_of(1, false, true, &timed));
  EXPECT_GT(one.model_flops, 0.0);
  EXPECT_DOUBLE_EQ(two.model_flops, 2 * one.model_flops);
  // The recomputation scores one sample a forward; the pass packs them by twos: more than a
  // third of the pass's forward-and-backward, less than all of it.
  EXPECT_GT(rescored.model_flops - one.model_flops, one.model_flops / 3 * 0.5);
  EXPECT_LT(rescored.model_flops - one.model_flops, one.model_flops);
  EXPECT_EQ(one.forward_seconds + one.backward_seconds + one.optimizer_seconds, 0.0);
  EXPECT_GT(timed.forward_seconds, 0.0);
  EXPECT_GT(timed.backward_seconds, 0.0);
  EXPECT_GT(timed.optimizer_seconds, 0.0);
  EXPECT_GE(timed.upload_seconds, 0.0);
}

// A finite-difference check of the whole TraceRL objective (trace views, masked-token softmax,
// clipped ratio, k3 KL, per-sequence means) on a float64 copy of the model: for a dozen weights,
// (L(w + h) - L(w - h)) / 2h against the gradient backward leaves. The sampling log-probs are set
// so that the ratios sit away from 1 on both sides of the clip range (1.5, 0.6 clipped; 1.1, 0.9
// not) and the advantages have both signs: a loss or gradient off anywhere in that chain shows.
TEST(PolicyTrainerTest, TheGradientMatchesFiniteDifferencesOfTheObjective) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
  model->to(at::kDouble);
  PolicyTrainerOptions o = trainer_options();
  o.activation_checkpointing = false;
  o.loss.kl_beta = 0.1;
  o.loss.kl_estimator = KlEstimator::kK3;
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();

  const double ratios[] = {1.5, 0.6, 1.1, 0.9};
  const double advantages[] = {1.0, -0.7, 0.4};
  std::size_t k = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    auto lp = (*trainer)->log_probs(samples[i]);
    ASSERT_TRUE(lp.ok()) << lp.status().to_string();
    for (std::size_t t = 0; t < lp->size(); ++t) {
      samples[i].old_log_probs[t] = static_cast<float>((*lp)[t] - std::log(ratios[k++ % 4]));
    }
    samples[i].advantage = advantages[i];
  }

  auto at_point = (*trainer)->gradients(samples);
  ASSERT_TRUE(at_point.ok()) << at_point.status().to_string();
  EXPECT_GT(at_point->clip_fraction, 0.3) << "the chosen ratios should leave the clip range";
  EXPECT_GT(at_point->kl, 1e-3);
  // The weights to check: the largest gradient entry of a few tensors, and one fixed entry.
  struct Probe {
    at::Tensor param;
    std::int64_t index;
    double grad;
  };
  std::vector<Probe> probes;
  {
    torch::NoGradGuard no_grad;
    for (const auto& named : model->named_parameters()) {
      const at::Tensor grad = named.value().grad();
      ASSERT_TRUE(grad.defined()) << named.key() << " has no gradient";
      const at::Tensor flat = grad.reshape({-1});
      for (std::int64_t index : {flat.abs().argmax().item<std::int64_t>(), flat.numel() / 3}) {
        probes.push_back({named.value(), index, flat[index].item<double>()});
      }
      if (probes.size() >= 12) break;
    }
  }
  const double h = 1e-6;
  for (const Probe& probe : probes) {
    double loss[2];
    for (int side = 0; side < 2; ++side) {
      {
        torch::NoGradGuard no_grad;
        probe.param.view({-1})[probe.index].add_(side == 0 ? h : -2 * h);
      }
      auto stats = (*trainer)->gradients(samples);
      ASSERT_TRUE(stats.ok()) << stats.status().to_string();
      loss[side] = stats->loss;
    }
    {
      torch::NoGradGuard no_grad;
      probe.param.view({-1})[probe.index].add_(h);
    }
    const double numeric = (loss[0] - loss[1]) / (2 * h);
    EXPECT_NEAR(numeric, probe.grad, 1e-6 + 1e-5 * std::abs(probe.grad))
        << "entry " << probe.index << " of a " << probe.param.sizes() << " weight";
  }
}

TEST(PolicyTrainerTest, BadSamplesAndOptionsAreNamed) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
  samples[1].unmask_steps.push_back(0);
  auto trainer = PolicyTrainer::create(model, trainer_options());
  ASSERT_TRUE(trainer.ok());
  auto stats = (*trainer)->update(samples);
  EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(stats.status().to_string().find("sample 1"), std::string::npos)
      << stats.status().to_string();
  EXPECT_EQ((*trainer)->steps_taken(), 0);
  // Asked to, it leaves the bad sample out and trains on the rest.
  std::vector<std::pair<std::size_t, Status>> left_out;
  auto partial = (*trainer)->update(samples, &left_out);
  ASSERT_TRUE(partial.ok()) << partial.status().to_string();
  ASSERT_EQ(left_out.size(), 1u);
  EXPECT_EQ(left_out[0].first, 1u);
  EXPECT_EQ(left_out[0].second.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(partial->sequences, 2);
  EXPECT_EQ((*trainer)->steps_taken(), 1);

  PolicyTrainerOptions o = trainer_options();
  o.layout.block_size = 8;
  EXPECT_EQ(PolicyTrainer::create(model, o).status().code(), StatusCode::kInvalidArgument);
  o = trainer_options();
  o.layout.mask_token_id = 5;
  EXPECT_EQ(PolicyTrainer::create(model, o).status().code(), StatusCode::kInvalidArgument);
}

// Samples with advantages of both signs and one in between, for the update-equality tests below.
std::vector<TraceSample> mixed_advantage_samples(Qwen3LM model) {
  std::vector<TraceSample> samples = sample_traces(model, Remasking::LOW_CONFIDENCE_STATIC);
  samples[0].advantage = 1.0;
  samples[1].advantage = -1.0;
  samples[2].advantage = 0.5;
  return samples;
}

// Two updates of the same samples agree: loss, ratio, gradient norm, tokens and lm_head.
void expect_same_update(const PolicyUpdateStats& a, const at::Tensor& a_weights,
                        const PolicyUpdateStats& b, const at::Tensor& b_weights) {
  EXPECT_LT((a_weights - b_weights).abs().max().item<double>(), 1e-5);
  EXPECT_NEAR(a.loss, b.loss, 1e-5 * std::abs(b.loss) + 1e-9);
  EXPECT_NEAR(a.mean_ratio, b.mean_ratio, 1e-6);
  EXPECT_EQ(a.scored_tokens, b.scored_tokens);
}

// Data-parallel (data_parallel.h): the update on two and three CPU replicas, their gradients
// summed in small buckets while the backward runs, gives the one-replica update: the same loss,
// figures and weights, with ppo_epochs 2 and importance weights on (rescoring, then two steps).
// A resume's optimizer state loads into every replica.
TEST(PolicyTrainerTest, AnUpdateOnSeveralReplicasEqualsTheUpdateOnOne) {
  std::vector<at::Tensor> after;
  std::vector<PolicyUpdateStats> stats;
  const std::string state = ::testing::TempDir() + "/dp_optimizer.pt";
  for (int replicas : {1, 2, 3}) {
    SCOPED_TRACE("replicas " + std::to_string(replicas));
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = mixed_advantage_samples(model);
    PolicyTrainerOptions o = trainer_options();
    o.optimizer.lr = 1e-3;
    o.optimizer.grad_accumulation = 3;  // one micro-batch per sample, for every replica count
    o.loss.ppo_epochs = 2;
    o.importance_cap = 2.0;
    o.data_parallel.devices.assign(static_cast<std::size_t>(replicas), c10::Device(at::kCPU));
    o.data_parallel.buckets.first_bucket_bytes = o.data_parallel.buckets.bucket_bytes = 2048;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok()) << trainer.status().to_string();
    EXPECT_EQ((*trainer)->replicas(), replicas);
    auto update = (*trainer)->update(samples);
    ASSERT_TRUE(update.ok()) << update.status().to_string();
    stats.push_back(*update);
    after.push_back(model->lm_head.detach().clone());
    if (replicas == 1) {
      ASSERT_TRUE((*trainer)->save_optimizer_state(state).ok());
    }
    if (replicas == 3) {  // every replica back to the one-replica state, and a step from there
      ASSERT_TRUE((*trainer)->load_optimizer_state(state).ok());
      EXPECT_TRUE(at::allclose(model->lm_head, after[0], 0, 0));
      ASSERT_TRUE((*trainer)->update(samples).ok());
    }
  }
  for (std::size_t k = 1; k < after.size(); ++k) {
    expect_same_update(stats[k], after[k], stats[0], after[0]);
    EXPECT_NEAR(stats[k].grad_norm, stats[0].grad_norm, 1e-5 * stats[0].grad_norm);
    EXPECT_EQ(stats[k].forwards, stats[0].forwards);
    EXPECT_NEAR(stats[k].model_flops, stats[0].model_flops, 1e-6 * stats[0].model_flops);
  }
  EXPECT_GT((after[0] - random_lm(tiny_config(), 3)->lm_head).abs().max().item<double>(), 1e-4);
}

// share_clean_copy (the default): each sample's clean copy runs once beside all its trace views
// (Qwen3LM::hidden_training_views). The update equals the one with a clean copy per view, in
// loss, figures and weights, with fewer model FLOPs.
TEST(PolicyTrainerTest, ASharedCleanCopyGivesTheUpdateOfOneCopyPerView) {
  std::vector<at::Tensor> after;
  std::vector<PolicyUpdateStats> stats;
  for (bool shared : {true, false}) {
    Qwen3LM model = random_lm(tiny_config(), 3);
    std::vector<TraceSample> samples = mixed_advantage_samples(model);
    PolicyTrainerOptions o = trainer_options();
    o.optimizer.lr = 1e-3;
    o.loss.ppo_epochs = 2;
    o.share_clean_copy = shared;
    auto trainer = PolicyTrainer::create(model, o);
    ASSERT_TRUE(trainer.ok());
    auto update = (*trainer)->update(samples);
    ASSERT_TRUE(update.ok()) << update.status().to_string();
    stats.push_back(*update);
    after.push_back(model->lm_head.detach().clone());
  }
  expect_same_update(stats[0], after[0], stats[1], after[1]);
  EXPECT_NEAR(stats[0].grad_norm, stats[1].grad_norm, 1e-4 * stats[1].grad_norm);
  EXPECT_LT(stats[0].model_flops, stats[1].model_flops);
}

// Test double: LibTorch's CPU allocator, which refuses (c10::OutOfMemoryError, as the CUDA caching
// allocator does) every block over `limit` bytes and remembers the largest block asked for. In
// place while it lives.
class RefusingCpuAllocator : public c10::Allocator {
 public:
  explicit RefusingCpuAllocator(std::size_t limit) : real_(c10::GetCPUAllocator()), limit_(limit) {
    c10::SetCPUAllocator(this, kPriority);
  }
  ~RefusingCpuAllocator() override { c10::SetCPUAllocator(real_, kPriority); }
  RefusingCpuAllocator(const RefusingCpuAllocator&) = delete;
  RefusingCpuAllocator& operator=(const RefusingCpuAllocator&) = delete;

  c10::DataPtr allocate(std::size_t n) DICE_TORCH_ALLOCATE_CONST override {
    std::size_t seen = largest_.load();
    while (n > seen && !largest_.compare_exchange_weak(seen, n)) {
    }
    if (n > limit_) {
      ++refused_;
      TORCH_CHECK_WITH(OutOfMemoryError, false, "test double: out of memory: ", n, " bytes");
    }
    return real_->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return real_->raw_deleter(); }
  // Pure in LibTorch >= 2.2, absent before.
  void copy_data(void* dest, const void* src, std::size_t count) const {
    std::memcpy(dest, src, count);
  }
  std::size_t largest() const { return largest_.load(); }
  int refused() const { return refused_.load(); }

 private:
  static constexpr std::uint8_t kPriority = 200;  // above the default CPU allocator's
  c10::Allocator* real_;
  std::size_t limit_;
  mutable std::atomic<std::size_t> largest_{0};
  mutable std::atomic<int> refused_{0};
};

// The largest block an update of `samples` asks for with `grad_accumulation` micro-batches.
std::size_t largest_block(int grad_accumulation) {
  Qwen3LM model = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = mixed_advantage_samples(model);
  PolicyTrainerOptions o = trainer_options();
  o.optimizer.grad_accumulation = grad_accumulation;
  auto trainer = PolicyTrainer::create(model, o);
  EXPECT_TRUE(trainer.ok());
  RefusingCpuAllocator counting(std::numeric_limits<std::size_t>::max());
  EXPECT_TRUE((*trainer)->update(samples).ok());
  return counting.largest();
}

// The learner shares its GPU with the rollout and the reward's judges. An update that runs out of
// memory before its optimizer step releases the cache and runs again with its forwards cut finer:
// the same update (micro-batches only add up), and later updates keep the finer cut. Where even
// one sample a forward does not fit, the update fails as out of memory, its weights unchanged.
TEST(PolicyTrainerTest, AnUpdateOutOfMemoryRunsAgainWithSmallerForwards) {
  const std::size_t whole = largest_block(1), each = largest_block(3);
  ASSERT_LT(each, whole) << "one sample a forward must ask for smaller blocks than all three";

  Qwen3LM fits = random_lm(tiny_config(), 3);
  std::vector<TraceSample> samples = mixed_advantage_samples(fits);
  PolicyTrainerOptions o = trainer_options();
  o.optimizer.lr = 1e-3;
  o.optimizer.grad_accumulation = 3;
  auto reference = PolicyTrainer::create(fits, o);
  ASSERT_TRUE(reference.ok());
  auto expected = (*reference)->update(samples);
  ASSERT_TRUE(expected.ok());

  Qwen3LM model = random_lm(tiny_config(), 3);
  o.optimizer.grad_accumulation = 1;
  auto trainer = PolicyTrainer::create(model, o);
  ASSERT_TRUE(trainer.ok());
  {
    RefusingCpuAllocator device(each);
    auto update = (*trainer)->update(samples);
    ASSERT_TRUE(update.ok()) << update.status().to_string();
    EXPECT_GT(device.refused(), 0);
    EXPECT_GE((*trainer)->memory_split(), 3);  // 1 -> 2 -> 4: one sample a forward
    expect_same_update(*update, model->lm_head, *expected, fits->lm_head);
    EXPECT_EQ((*trainer)->steps_taken(), 1);
    const int split = (*trainer)->memory_split();
    EXPECT_TRUE((*trainer)->update(samples).ok());
    EXPECT_EQ((*trainer)->memory_split(), split);
  }

  Qwen3LM starved = random_lm(tiny_config(), 3);
  auto none = PolicyTrainer::create(starved, o);
  ASSERT_TRUE(none.ok());
  const at::Tensor before = starved->lm_head.detach().clone();
  RefusingCpuAllocator device(64);
  auto update = (*none)->update(samples);
  ASSERT_FALSE(update.ok());
  EXPECT_TRUE(out_of_device_memory(update.status())) << update.status().to_string();
  EXPECT_EQ((*none)->steps_taken(), 0);
  EXPECT_TRUE(at::equal(starved->lm_head, before));
}

}  // namespace
}  // namespace dice
