// BlockDiffusionSampler against a plain, uncached reference decoder written here: one sequence at
// a time, the whole sequence through forward_block_causal at every step, the sampling and
// remasking rules re-implemented with host loops in double precision.
#include "rollout/sampler.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "tests/model/model_test_util.h"

namespace dice {
namespace {

using testing_util::random_lm;
using testing_util::tiny_config;

struct Reference {
  std::vector<int64_t> tokens;
  std::vector<int32_t> steps;
  std::vector<double> log_probs;
  FinishReason finish = FinishReason::MAX_TOKENS;
};

// One position's greedy draw under the policy of rollout/token_draw.h, in double.
struct Pick {
  int64_t token;
  double log_prob, confidence, entropy;
};

Pick greedy_pick(std::vector<double> z, const SamplingOptions& s, int64_t mask_id) {
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const int64_t vocab = static_cast<int64_t>(z.size());
  z[static_cast<size_t>(mask_id)] = neg_inf;
  if (s.top_k > 0 && s.top_k < vocab) {
    std::vector<double> sorted = z;
    std::sort(sorted.begin(), sorted.end(), std::greater<double>());
    const double kth = sorted[static_cast<size_t>(s.top_k - 1)];
    for (double& v : z) {
      if (v < kth) v = neg_inf;
    }
  }
  auto softmax = [&](const std::vector<double>& x) {
    const double top = *std::max_element(x.begin(), x.end());
    std::vector<double> p(x.size());
    double sum = 0;
    for (size_t v = 0; v < x.size(); ++v) sum += p[v] = std::exp(x[v] - top);
    for (double& v : p) v /= sum;
    return p;
  };
  if (s.top_p < 1.0) {
    std::vector<double> p = softmax(z);
    std::vector<size_t> order(z.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return z[a] > z[b]; });
    double before = 0;
    for (size_t i : order) {
      if (before >= s.top_p) z[i] = neg_inf;
      before += p[i];
    }
  }
  std::vector<double> p = softmax(z);
  Pick pick;
  pick.token = std::max_element(z.begin(), z.end()) - z.begin();  // first maximum
  pick.confidence = p[static_cast<size_t>(pick.token)];
  pick.log_prob = std::log(pick.confidence);
  pick.entropy = 0;
  for (double v : p) {
    if (v > 0) pick.entropy -= v * std::log(v);
  }
  return pick;
}

// Positions of `masked` ordered by key (ascending or descending), ties to the left.
std::vector<int64_t> order_by(const std::vector<int64_t>& masked, const std::vector<double>& key,
                              bool descending) {
  std::vector<int64_t> order = masked;
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return descending ? key[a] > key[b] : key[a] < key[b];
  });
  return order;
}

std::vector<int64_t> choose(const SamplingOptions& s, const std::vector<int64_t>& masked,
                            const std::vector<Pick>& picks, int64_t quota) {
  const int64_t left = static_cast<int64_t>(masked.size());
  const int64_t q = std::min(std::max<int64_t>(quota, 1), left);
  std::vector<double> conf, ent;
  for (const Pick& p : picks) {
    conf.push_back(p.confidence);
    ent.push_back(p.entropy);
  }
  auto first = [](std::vector<int64_t> v, int64_t n) {
    v.resize(static_cast<size_t>(n));
    return v;
  };
  switch (s.remasking) {
    case Remasking::LOW_CONFIDENCE_STATIC:
      return first(order_by(masked, conf, true), q);
    case Remasking::LOW_CONFIDENCE_DYNAMIC: {
      std::vector<int64_t> above;
      for (int64_t i : masked) {
        if (conf[i] >= s.threshold) above.push_back(i);
      }
      return static_cast<int64_t>(above.size()) >= q ? above
                                                     : first(order_by(masked, conf, true), q);
    }
    case Remasking::SEQUENTIAL:
      return first(masked, q);
    case Remasking::ENTROPY_BOUNDED: {
      std::vector<int64_t> order = order_by(masked, ent, false);
      int64_t n = 0;
      double sum = 0;
      for (int64_t i : order) {
        sum += ent[i];
        if (sum > s.threshold) break;
        ++n;
      }
      return first(order, std::max(n, q));
    }
    case Remasking::RANDOM:  // its choices come from the sampler's generator
      ADD_FAILURE() << "the reference decoder does not reproduce random remasking";
      return {};
  }
  return {};
}

Reference reference_decode(Qwen3LMImpl& lm, const std::vector<int64_t>& prompt,
                           const SamplingOptions& s, int64_t mask_id) {
  const int64_t bs = s.block_size, steps = s.denoising_steps;
  const int64_t start0 = static_cast<int64_t>(prompt.size()) / bs * bs;
  std::vector<int64_t> committed(prompt.begin(), prompt.begin() + start0);
  std::vector<int64_t> block(prompt.begin() + start0, prompt.end());
  Reference out;
  while (true) {
    const int64_t fixed = static_cast<int64_t>(block.size());
    block.resize(static_cast<size_t>(bs), mask_id);
    std::vector<int32_t> step_of(static_cast<size_t>(bs), -1);
    std::vector<double> logp_of(static_cast<size_t>(bs), 0);
    const int64_t m = bs - fixed;
    for (int64_t k = 0;; ++k) {
      std::vector<int64_t> masked;
      for (int64_t i = 0; i < bs; ++i) {
        if (block[i] == mask_id) masked.push_back(i);
      }
      if (masked.empty()) break;
      EXPECT_LT(k, steps) << "reference: block not finished within denoising_steps";
      std::vector<int64_t> seq = committed;
      seq.insert(seq.end(), block.begin(), block.end());
      at::Tensor ids = at::tensor(seq, at::kLong).unsqueeze(0);
      at::Tensor logits = lm.forward_block_causal(ids)[0]
                              .narrow(0, static_cast<int64_t>(committed.size()), bs)
                              .to(at::kDouble)
                              .contiguous();
      std::vector<Pick> picks;
      for (int64_t i = 0; i < bs; ++i) {
        const double* row = logits[i].data_ptr<double>();
        picks.push_back(greedy_pick(std::vector<double>(row, row + logits.size(1)), s, mask_id));
      }
      const int64_t quota = m / steps + (k < m % steps ? 1 : 0);
      for (int64_t i : choose(s, masked, picks, quota)) {
        block[i] = picks[i].token;
        step_of[i] = static_cast<int32_t>(k);
        logp_of[i] = picks[i].log_prob;
      }
    }
    for (int64_t i = fixed; i < bs; ++i) {
      out.tokens.push_back(block[i]);
      out.steps.push_back(step_of[i]);
      out.log_probs.push_back(logp_of[i]);
      const auto& stops = s.stop_token_ids;
      if (std::find(stops.begin(), stops.end(), static_cast<uint32_t>(block[i])) != stops.end()) {
        out.finish = FinishReason::STOP_TOKEN;
        return out;
      }
      if (static_cast<int64_t>(out.tokens.size()) >= s.max_new_tokens) return out;
    }
    committed.insert(committed.end(), block.begin(), block.end());
    block.clear();
  }
}

class SamplerTest : public ::testing::Test {
 protected:
  void SetUp() override { lm_ = random_lm(config_, 11); }

  SamplerOptions options(Remasking r, int steps = 4) const {
    SamplerOptions o;
    o.sampling.temperature = 0.0;
    o.sampling.top_k = 0;
    o.sampling.max_new_tokens = 14;
    o.sampling.block_size = 4;
    o.sampling.denoising_steps = steps;
    o.sampling.remasking = r;
    o.sampling.threshold = r == Remasking::ENTROPY_BOUNDED ? 0.6 : 0.2;
    o.sampling.stop_token_ids = {};
    o.mask_token_id = config_.mask_token_id;
    o.max_batch = 5;
    o.max_sequence_length = 64;
    return o;
  }

  // Prompts of lengths 1, 4, 6, 9, 11: every tail length 0..3, different numbers of blocks.
  std::vector<GenerationRequest> requests() const {
    std::vector<GenerationRequest> out;
    at::manual_seed(3);
    uint64_t id = 100;
    for (int64_t len : {1, 4, 6, 9, 11}) {
      at::Tensor t = at::randint(0, config_.vocab_size - 1, {len}, at::kLong);
      GenerationRequest r;
      r.id = id++;
      r.prompt.assign(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + len);
      out.push_back(r);
    }
    return out;
  }

  std::vector<GenerationResult> run(const SamplerOptions& o, std::vector<GenerationRequest> rs) {
    auto sampler = BlockDiffusionSampler::create(lm_, o);
    EXPECT_TRUE(sampler.ok()) << sampler.status().to_string();
    if (!sampler.ok()) return {};
    auto out = (*sampler)->generate(std::move(rs));
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return out.ok() ? *out : std::vector<GenerationResult>{};
  }

  // Returns the sampler's traces.
  std::vector<std::vector<int32_t>> expect_matches_reference(const SamplerOptions& o,
                                                             const std::string& label) {
    std::vector<GenerationRequest> rs = requests();
    std::vector<GenerationResult> got = run(o, rs);
    std::vector<std::vector<int32_t>> traces;
    EXPECT_EQ(got.size(), rs.size());
    if (got.size() != rs.size()) return traces;
    for (size_t i = 0; i < rs.size(); ++i) {
      Reference want = reference_decode(*lm_, rs[i].prompt, o.sampling, o.mask_token_id);
      EXPECT_EQ(got[i].id, rs[i].id);
      EXPECT_EQ(got[i].tokens, want.tokens) << label << " prompt " << i;
      EXPECT_EQ(got[i].unmask_steps, want.steps) << label << " prompt " << i;
      EXPECT_EQ(got[i].finish_reason, want.finish) << label << " prompt " << i;
      EXPECT_EQ(got[i].log_probs.size(), want.log_probs.size());
      for (size_t t = 0; t < want.log_probs.size() && t < got[i].log_probs.size(); ++t) {
        EXPECT_NEAR(got[i].log_probs[t], want.log_probs[t], 1e-4) << label << " token " << t;
      }
      traces.push_back(got[i].unmask_steps);
    }
    return traces;
  }

  // Two runs with one seed give the same samples, another seed others (SeedReproducesSamples).
  void seed_reproduces_samples(Remasking r);

  torch::NoGradGuard no_grad_;
  ModelConfig config_ = tiny_config();
  Qwen3LM lm_{nullptr};
};

const Remasking kAllStrategies[] = {Remasking::LOW_CONFIDENCE_STATIC,
                                    Remasking::LOW_CONFIDENCE_DYNAMIC, Remasking::SEQUENTIAL,
                                    Remasking::ENTROPY_BOUNDED};

const char* name_of(Remasking r) {
  for (const auto& e : kRemaskingNames) {
    if (e.value == r) return e.name;
  }
  return "?";
}

TEST_F(SamplerTest, GreedyMatchesUncachedReferenceForEveryStrategy) {
  std::map<Remasking, std::vector<std::vector<int32_t>>> traces;
  for (Remasking r : kAllStrategies) {
    for (int steps : {4, 2}) {
      for (bool pack : {true, false}) {
        SamplerOptions o = options(r, steps);
        o.pack_chunks = pack;
        const std::string label = std::string(name_of(r)) + " steps " + std::to_string(steps) +
                                  (pack ? " packed" : " padded");
        auto t = expect_matches_reference(o, label);
        if (steps == 4 && pack) traces[r] = t;
        o.sampling.top_k = 1;  // one-hot policy: confidence 1, entropy 0 everywhere
        (void)expect_matches_reference(o, label + " top_k 1");
      }
    }
  }
  // The threshold rules did act: some step committed several tokens (all-step-0 traces would
  // also match a broken reference that ignores them).
  EXPECT_NE(traces[Remasking::LOW_CONFIDENCE_DYNAMIC], traces[Remasking::LOW_CONFIDENCE_STATIC]);
  EXPECT_NE(traces[Remasking::ENTROPY_BOUNDED], traces[Remasking::LOW_CONFIDENCE_STATIC]);
}

TEST_F(SamplerTest, GreedyMatchesReferenceWithTopKTopP) {
  SamplerOptions o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.sampling.top_k = 5;
  o.sampling.top_p = 0.6;
  (void)expect_matches_reference(o, "static top_k 5 top_p 0.6");
  o.sampling.remasking = Remasking::ENTROPY_BOUNDED;
  o.sampling.threshold = 0.3;
  (void)expect_matches_reference(o, "entropy top_k 5 top_p 0.6");
}

// Per block, how many tokens each step unmasked; the first block of a prompt with a tail has
// fewer positions.
std::vector<std::vector<int>> per_block_counts(const GenerationResult& r, int64_t prompt_len,
                                               int64_t bs, int64_t steps) {
  std::vector<std::vector<int>> blocks;
  size_t t = 0;
  int64_t size = bs - prompt_len % bs;
  while (t < r.unmask_steps.size()) {
    std::vector<int> counts(static_cast<size_t>(steps), 0);
    for (int64_t i = 0; i < size && t < r.unmask_steps.size(); ++i, ++t) {
      const int k = r.unmask_steps[t];
      EXPECT_GE(k, 0);
      EXPECT_LT(k, steps);
      if (k >= 0 && k < steps) ++counts[static_cast<size_t>(k)];
    }
    blocks.push_back(counts);
    size = bs;
  }
  return blocks;
}

TEST_F(SamplerTest, TracesFollowTheStrategy) {
  for (Remasking r : {Remasking::LOW_CONFIDENCE_STATIC, Remasking::LOW_CONFIDENCE_DYNAMIC,
                      Remasking::SEQUENTIAL, Remasking::ENTROPY_BOUNDED, Remasking::RANDOM}) {
    for (int steps : {4, 2, 1}) {
      SamplerOptions o = options(r, steps);
      o.sampling.temperature = 1.0;  // traces hold whatever the draw
      o.sampling.max_new_tokens = 24;
      std::vector<GenerationRequest> rs = requests();
      std::vector<GenerationResult> got = run(o, rs);
      ASSERT_EQ(got.size(), rs.size());
      for (size_t i = 0; i < rs.size(); ++i) {
        const GenerationResult& g = got[i];
        ASSERT_EQ(g.tokens.size(), 24u);
        ASSERT_EQ(g.unmask_steps.size(), g.tokens.size());
        ASSERT_EQ(g.log_probs.size(), g.tokens.size());
        for (float lp : g.log_probs) {
          EXPECT_TRUE(std::isfinite(lp) && lp <= 0.0f) << lp;
        }
        for (int64_t tok : g.tokens) EXPECT_NE(tok, config_.mask_token_id);
        const int64_t plen = static_cast<int64_t>(rs[i].prompt.size());
        auto blocks = per_block_counts(g, plen, 4, steps);
        for (size_t b = 0; b + 1 < blocks.size(); ++b) {  // the last block may be cut short
          const int m = b == 0 ? static_cast<int>(4 - plen % 4) : 4;
          int done = 0, quota_done = 0;
          for (int k = 0; k < steps; ++k) {
            const int quota = m / steps + (k < m % steps ? 1 : 0);
            const int n = blocks[b][static_cast<size_t>(k)];
            if (r == Remasking::LOW_CONFIDENCE_STATIC || r == Remasking::SEQUENTIAL ||
                r == Remasking::RANDOM) {
              EXPECT_EQ(n, quota) << name_of(r) << " block " << b << " step " << k;
            } else if (done < m) {
              EXPECT_GE(n, 1) << name_of(r) << " block " << b << " step " << k;
              EXPECT_GE(done + n, std::min(m, quota_done + quota)) << name_of(r);
            } else {
              EXPECT_EQ(n, 0) << name_of(r) << " nothing left to commit";
            }
            done += n;
            quota_done += quota;
          }
          EXPECT_EQ(done, m);
        }
        if (r == Remasking::SEQUENTIAL) {  // steps never decrease left to right in a block
          for (size_t t = 1; t < g.unmask_steps.size(); ++t) {
            const bool same_block = (plen + static_cast<int64_t>(t)) % 4 != 0;
            if (same_block) {
              EXPECT_LE(g.unmask_steps[t - 1], g.unmask_steps[t]);
            }
          }
        }
      }
    }
  }
}

TEST_F(SamplerTest, SeedReproducesSamples) {
  for (Remasking r : {Remasking::LOW_CONFIDENCE_DYNAMIC, Remasking::RANDOM}) {
    SCOPED_TRACE(name_of(r));
    seed_reproduces_samples(r);
  }
}

void SamplerTest::seed_reproduces_samples(Remasking r) {
  SamplerOptions o = options(r);
  o.sampling.temperature = 1.0;
  o.sampling.max_new_tokens = 20;
  o.seed = 1234;
  std::vector<GenerationResult> a = run(o, requests());
  std::vector<GenerationResult> b = run(o, requests());
  o.seed = 1235;
  std::vector<GenerationResult> c = run(o, requests());
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  ASSERT_EQ(c.size(), 5u);
  bool any_difference = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tokens, b[i].tokens);
    EXPECT_EQ(a[i].unmask_steps, b[i].unmask_steps);
    EXPECT_EQ(a[i].log_probs, b[i].log_probs);
    any_difference = any_difference || a[i].tokens != c[i].tokens;
  }
  EXPECT_TRUE(any_difference) << "seeds 1234 and 1235 drew the same 100 tokens";
  // Temperature 1 draws are not the greedy tokens.
  o.sampling.temperature = 0.0;
  std::vector<GenerationResult> greedy = run(o, requests());
  bool differs_from_greedy = false;
  for (size_t i = 0; i < a.size(); ++i) differs_from_greedy |= a[i].tokens != greedy[i].tokens;
  EXPECT_TRUE(differs_from_greedy);
}

TEST_F(SamplerTest, ContinuousBatchingMatchesRunningAlone) {
  for (Remasking r : {Remasking::LOW_CONFIDENCE_STATIC, Remasking::LOW_CONFIDENCE_DYNAMIC}) {
    SamplerOptions o = options(r);
    o.max_batch = 2;
    std::vector<GenerationRequest> rs = requests();
    // Different lengths so that slots free at different steps and new prompts join mid-flight.
    const int lengths[] = {5, 17, 9, 3, 12};
    for (size_t i = 0; i < rs.size(); ++i) rs[i].max_new_tokens = lengths[i];
    auto sampler = BlockDiffusionSampler::create(lm_, o);
    ASSERT_TRUE(sampler.ok()) << sampler.status().to_string();
    BlockDiffusionSampler& s = **sampler;
    for (const GenerationRequest& q : rs) ASSERT_TRUE(s.add_request(q).ok());
    EXPECT_EQ(s.num_waiting(), 5);
    std::vector<GenerationResult> got;
    int guard = 0;
    while (!s.idle() && ++guard < 1000) {
      ASSERT_TRUE(s.step().ok());
      EXPECT_LE(s.num_running(), 2);
      for (GenerationResult& g : s.take_finished()) got.push_back(std::move(g));
    }
    ASSERT_EQ(got.size(), rs.size());
    EXPECT_EQ(s.stats().finished, 5);
    for (const GenerationRequest& q : rs) {
      auto it = std::find_if(got.begin(), got.end(),
                             [&](const GenerationResult& g) { return g.id == q.id; });
      ASSERT_NE(it, got.end());
      SamplerOptions alone_options = o;
      alone_options.max_batch = 1;
      std::vector<GenerationResult> alone = run(alone_options, {q});
      ASSERT_EQ(alone.size(), 1u);
      EXPECT_EQ(it->tokens, alone[0].tokens) << name_of(r) << " request " << q.id;
      EXPECT_EQ(it->unmask_steps, alone[0].unmask_steps);
      EXPECT_EQ(it->tokens.size(), static_cast<size_t>(q.max_new_tokens));
    }
    // Requests finished out of order: the short ones first.
    EXPECT_NE(got.front().id, rs[1].id);
  }
}

// The prompts' tails (1, 4, 6, 9, 11 tokens: 3, 4, 2, 3, 1 masks in the first block) put the
// slots in different phases: in most commit forwards only some slots commit, and slots go idle
// as the short requests end. Packed forwards skip that padding and give the same samples.
TEST_F(SamplerTest, PackedForwardsSkipPaddingOfMixedPhases) {
  for (Remasking r : {Remasking::LOW_CONFIDENCE_STATIC, Remasking::LOW_CONFIDENCE_DYNAMIC}) {
    SamplerStats stats[2];
    std::vector<GenerationResult> out[2];
    for (int pack = 0; pack < 2; ++pack) {
      SamplerOptions o = options(r);
      o.sampling.temperature = 1.0;
      o.sampling.max_new_tokens = 24;
      o.seed = 77;
      o.pack_chunks = pack == 1;
      std::vector<GenerationRequest> rs = requests();
      for (size_t i = 0; i < rs.size(); ++i) rs[i].max_new_tokens = static_cast<int>(8 + 4 * i);
      auto sampler = BlockDiffusionSampler::create(lm_, o);
      ASSERT_TRUE(sampler.ok()) << sampler.status().to_string();
      auto got = (*sampler)->generate(rs);
      ASSERT_TRUE(got.ok()) << got.status().to_string();
      out[pack] = *got;
      stats[pack] = (*sampler)->stats();
    }
    ASSERT_EQ(out[0].size(), out[1].size());
    for (size_t i = 0; i < out[0].size(); ++i) {
      EXPECT_EQ(out[1][i].tokens, out[0][i].tokens) << name_of(r) << " request " << i;
      EXPECT_EQ(out[1][i].unmask_steps, out[0][i].unmask_steps) << name_of(r);
      ASSERT_EQ(out[1][i].log_probs.size(), out[0][i].log_probs.size());
      for (size_t t = 0; t < out[0][i].log_probs.size(); ++t) {
        EXPECT_NEAR(out[1][i].log_probs[t], out[0][i].log_probs[t], 1e-5);
      }
    }
    EXPECT_EQ(stats[1].steps, stats[0].steps);
    EXPECT_EQ(stats[1].committed_tokens, stats[0].committed_tokens);
    // Padded: every forward is max_batch x (1 or 2 blocks). Packed: 1 block per running slot plus
    // 1 per commit, far fewer.
    EXPECT_EQ(stats[0].processed_tokens % 4, 0);
    EXPECT_LT(stats[1].processed_tokens, stats[0].processed_tokens * 3 / 4) << name_of(r);
    EXPECT_GE(stats[1].processed_tokens, 4 * stats[1].row_forwards);
    EXPECT_LE(stats[1].processed_tokens, 8 * stats[1].row_forwards);
  }
}

TEST_F(SamplerTest, CancelAllFreesEverySlotForTheNextRequests) {
  SamplerOptions o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.max_batch = 2;
  std::vector<GenerationRequest> rs = requests();  // 5 requests: 2 run, 3 wait
  auto sampler = BlockDiffusionSampler::create(lm_, o);
  ASSERT_TRUE(sampler.ok()) << sampler.status().to_string();
  BlockDiffusionSampler& s = **sampler;
  for (const GenerationRequest& q : rs) ASSERT_TRUE(s.add_request(q).ok());
  ASSERT_TRUE(s.step().ok());
  ASSERT_TRUE(s.step().ok());
  ASSERT_EQ(s.num_running(), 2);
  std::vector<uint64_t> dropped = s.cancel_all();
  std::sort(dropped.begin(), dropped.end());
  std::vector<uint64_t> ids;
  for (const GenerationRequest& q : rs) ids.push_back(q.id);
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(dropped, ids);
  EXPECT_TRUE(s.idle());
  EXPECT_TRUE(s.take_finished().empty());
  // The freed slots (and their KV rows) serve new requests exactly as a fresh sampler would.
  auto again = s.generate({rs[3], rs[4]});
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  std::vector<GenerationResult> fresh = run(o, {rs[3], rs[4]});
  ASSERT_EQ(fresh.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ((*again)[i].tokens, fresh[i].tokens);
    EXPECT_EQ((*again)[i].unmask_steps, fresh[i].unmask_steps);
  }
}

TEST_F(SamplerTest, StopTokensAndMaxNewTokensEndSequences) {
  SamplerOptions o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.sampling.max_new_tokens = 20;
  std::vector<GenerationRequest> rs = requests();
  std::vector<GenerationResult> full = run(o, rs);
  ASSERT_EQ(full.size(), rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(full[i].tokens.size(), 20u);
    EXPECT_EQ(full[i].finish_reason, FinishReason::MAX_TOKENS);
  }
  // Stop on the 7th token of request 0: the output ends right after its first occurrence.
  const int64_t stop = full[0].tokens[6];
  const size_t first =
      std::find(full[0].tokens.begin(), full[0].tokens.end(), stop) - full[0].tokens.begin();
  GenerationRequest q = rs[0];
  q.stop_token_ids = std::vector<uint32_t>{static_cast<uint32_t>(stop)};
  GenerationRequest short_one = rs[1];
  short_one.max_new_tokens = 6;
  std::vector<GenerationResult> got = run(o, {q, short_one});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].finish_reason, FinishReason::STOP_TOKEN);
  EXPECT_EQ(got[0].tokens,
            std::vector<int64_t>(full[0].tokens.begin(), full[0].tokens.begin() + first + 1));
  EXPECT_EQ(got[1].finish_reason, FinishReason::MAX_TOKENS);
  EXPECT_EQ(got[1].tokens,
            std::vector<int64_t>(full[1].tokens.begin(), full[1].tokens.begin() + 6));
  EXPECT_EQ(got[1].unmask_steps.size(), 6u);
  // The sampler-wide stop list applies when a request has none of its own.
  o.sampling.stop_token_ids = {static_cast<uint32_t>(stop)};
  std::vector<GenerationResult> via_options = run(o, {rs[0]});
  ASSERT_EQ(via_options.size(), 1u);
  EXPECT_EQ(via_options[0].tokens, got[0].tokens);
}

TEST_F(SamplerTest, BadOptionsAndRequestsGiveClearErrors) {
  auto create_error = [&](SamplerOptions o) {
    auto s = BlockDiffusionSampler::create(lm_, o);
    EXPECT_FALSE(s.ok());
    return s.ok() ? std::string() : s.status().to_string();
  };
  SamplerOptions o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.sampling.denoising_steps = 5;
  EXPECT_NE(create_error(o).find("denoising_steps"), std::string::npos);
  o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.sampling.block_size = 8;
  o.sampling.denoising_steps = 4;
  EXPECT_NE(create_error(o).find("block_size 8 differs from the model's 4"), std::string::npos);
  o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.sampling.top_p = 0.0;
  EXPECT_NE(create_error(o).find("top_p"), std::string::npos);
  o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.sampling.temperature = -1.0;
  EXPECT_NE(create_error(o).find("temperature"), std::string::npos);
  o = options(Remasking::LOW_CONFIDENCE_DYNAMIC);
  o.sampling.threshold = 1.5;
  EXPECT_NE(create_error(o).find("threshold"), std::string::npos);
  o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.mask_token_id = 64;
  EXPECT_NE(create_error(o).find("mask_token_id 64"), std::string::npos);
  o = options(Remasking::LOW_CONFIDENCE_STATIC);
  o.max_batch = 0;
  EXPECT_NE(create_error(o).find("max_batch"), std::string::npos);
  EXPECT_FALSE(
      BlockDiffusionSampler::create(Qwen3LM(nullptr), options(Remasking::SEQUENTIAL)).ok());

  auto sampler = BlockDiffusionSampler::create(lm_, options(Remasking::SEQUENTIAL));
  ASSERT_TRUE(sampler.ok());
  BlockDiffusionSampler& s = **sampler;
  GenerationRequest r;
  r.id = 7;
  Status empty = s.add_request(r);
  EXPECT_EQ(empty.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(empty.message().find("request 7: empty prompt"), std::string::npos);
  r.prompt = {1, 2, config_.mask_token_id};
  EXPECT_NE(s.add_request(r).message().find("the mask token"), std::string::npos);
  r.prompt = {1, 64};
  EXPECT_NE(s.add_request(r).message().find("outside the vocabulary"), std::string::npos);
  r.prompt = std::vector<int64_t>(50, 1);  // 50 + 14 + 8 > 64
  EXPECT_NE(s.add_request(r).message().find("max_sequence_length is 64"), std::string::npos);
  r.prompt = {1, 2};
  r.stop_token_ids = std::vector<uint32_t>{99};
  EXPECT_FALSE(s.add_request(r).ok());
  EXPECT_TRUE(s.idle());  // nothing bad was queued
  std::vector<GenerationRequest> twice(2);
  twice[0].prompt = twice[1].prompt = {1, 2};
  auto dup = s.generate(twice);
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("appears twice"), std::string::npos);
}

}  // namespace
}  // namespace dice
