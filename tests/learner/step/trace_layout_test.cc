// trace_layout: the TraceRL views of a hand-built trace (block 4, 4 steps), and the errors.
#include "learner/step/trace_layout.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

constexpr std::int64_t kMask = 99;

// Prompt of 6 (block 0 whole, block 1 holds 2 prompt tokens); response of 7 spread over blocks
// 1..3; 13 tokens used, padded to 16.
TraceSample sample() {
  TraceSample s;
  s.prompt = {10, 11, 12, 13, 14, 15};
  s.response = {20, 21, 22, 23, 24, 25, 26};
  s.unmask_steps = {1, 0, /*block 2*/ 3, 0, 2, 1, /*block 3*/ 0};
  s.old_log_probs = {-0.1f, -0.2f, -0.3f, -0.4f, -0.5f, -0.6f, -0.7f};
  s.advantage = 1.5;
  return s;
}

TraceLayoutOptions options(int shrink = 1) {
  TraceLayoutOptions o;
  o.block_size = 4;
  o.denoising_steps = 4;
  o.shrink = shrink;
  o.mask_token_id = kMask;
  return o;
}

TEST(TraceLayoutTest, OneViewPerStepMasksLaterStepsAndScoresItsOwn) {
  auto layout = trace_layout(sample(), options());
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  const std::vector<std::int64_t> clean = {10, 11, 12, 13, 14, 15,    20,    21,
                                           22, 23, 24, 25, 26, kMask, kMask, kMask};
  EXPECT_EQ(layout->clean, clean);
  EXPECT_EQ(layout->prompt_length, 6);
  EXPECT_EQ(layout->response_length, 7);
  ASSERT_EQ(layout->views.size(), 4u);
  const std::int64_t m = kMask;
  const std::vector<std::vector<std::int64_t>> noisy = {
      {10, 11, 12, 13, 14, 15, m, m, m, m, m, m, m, m, m, m},
      {10, 11, 12, 13, 14, 15, m, 21, m, 23, m, m, 26, m, m, m},
      {10, 11, 12, 13, 14, 15, 20, 21, m, 23, m, 25, 26, m, m, m},
      {10, 11, 12, 13, 14, 15, 20, 21, m, 23, 24, 25, 26, m, m, m},
  };
  const std::vector<std::vector<std::int64_t>> positions = {{7, 9, 12}, {6, 11}, {10}, {8}};
  const std::vector<std::vector<std::int64_t>> targets = {{21, 23, 26}, {20, 25}, {24}, {22}};
  const std::vector<std::vector<float>> old = {
      {-0.2f, -0.4f, -0.7f}, {-0.1f, -0.6f}, {-0.5f}, {-0.3f}};
  for (int k = 0; k < 4; ++k) {
    const TraceView& v = layout->views[static_cast<std::size_t>(k)];
    EXPECT_EQ(v.first_step, k);
    EXPECT_EQ(v.noisy, noisy[static_cast<std::size_t>(k)]) << "step " << k;
    EXPECT_EQ(v.positions, positions[static_cast<std::size_t>(k)]) << "step " << k;
    EXPECT_EQ(v.targets, targets[static_cast<std::size_t>(k)]) << "step " << k;
    EXPECT_EQ(v.old_log_probs, old[static_cast<std::size_t>(k)]) << "step " << k;
  }
}

TEST(TraceLayoutTest, ShrinkScoresConsecutiveStepsTogetherAndEveryTokenOnce) {
  auto layout = trace_layout(sample(), options(2));
  ASSERT_TRUE(layout.ok());
  ASSERT_EQ(layout->views.size(), 2u);
  EXPECT_EQ(layout->views[0].positions, (std::vector<std::int64_t>{6, 7, 9, 11, 12}));
  EXPECT_EQ(layout->views[1].first_step, 2);
  EXPECT_EQ(layout->views[1].positions, (std::vector<std::int64_t>{8, 10}));
  // Step 2's view hides steps 2 and 3 only.
  EXPECT_EQ(layout->views[1].noisy[6], 20);
  EXPECT_EQ(layout->views[1].noisy[8], kMask);
  EXPECT_EQ(layout->views[1].noisy[10], kMask);
}

TEST(TraceLayoutTest, StepsNobodyUsedGiveNoViewAndAnEmptyResponseNone) {
  TraceSample s = sample();
  s.unmask_steps.assign(7, 0);  // e.g. dynamic remasking committing whole blocks at once
  auto layout = trace_layout(s, options());
  ASSERT_TRUE(layout.ok());
  ASSERT_EQ(layout->views.size(), 1u);
  EXPECT_EQ(layout->views[0].positions.size(), 7u);
  s.response.clear();
  s.unmask_steps.clear();
  s.old_log_probs.clear();
  layout = trace_layout(s, options());
  ASSERT_TRUE(layout.ok());
  EXPECT_TRUE(layout->views.empty());
  EXPECT_EQ(layout->clean.size(), 8u);  // the prompt, padded to whole blocks
}

TEST(TraceLayoutTest, TheTailIsContextOfItsStepAndNeverScored) {
  TraceSample s = sample();
  s.tail = {30, 31};  // positions 13 and 14 of the final block (12..15)
  s.tail_unmask_steps = {0, 2};
  auto layout = trace_layout(s, options());
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  EXPECT_EQ(layout->clean[13], 30);
  EXPECT_EQ(layout->clean[14], 31);
  EXPECT_EQ(layout->clean[15], kMask);
  ASSERT_EQ(layout->views.size(), 4u);
  EXPECT_EQ(layout->views[0].noisy[13], kMask);
  EXPECT_EQ(layout->views[1].noisy[13], 30);
  EXPECT_EQ(layout->views[1].noisy[14], kMask);
  EXPECT_EQ(layout->views[3].noisy[14], 31);
  for (const TraceView& v : layout->views) {
    for (std::int64_t p : v.positions) EXPECT_LT(p, 13) << "a tail token was scored";
  }
  s.tail = {30, 31, 32, 33};  // one past the final block
  s.tail_unmask_steps = {0, 0, 0, 0};
  auto bad = trace_layout(s, options());
  EXPECT_NE(bad.status().message().find("reaches past the final block"), std::string::npos)
      << bad.status().to_string();
  s.tail_unmask_steps = {0};
  EXPECT_EQ(trace_layout(s, options()).status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceLayoutTest, BadTracesAreRejectedWithWhatIsWrong) {
  TraceSample s = sample();
  s.unmask_steps.pop_back();
  auto bad = trace_layout(s, options());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("7 response tokens but 6 unmask steps"), std::string::npos)
      << bad.status().to_string();

  s = sample();
  s.unmask_steps[3] = 4;
  bad = trace_layout(s, options());
  EXPECT_NE(bad.status().message().find("response token 3 has unmask step 4, outside [0, 4)"),
            std::string::npos)
      << bad.status().to_string();

  s = sample();
  s.unmask_steps[0] = -1;
  EXPECT_EQ(trace_layout(s, options()).status().code(), StatusCode::kInvalidArgument);

  s = sample();
  s.response[2] = kMask;
  bad = trace_layout(s, options());
  EXPECT_NE(bad.status().message().find("response holds the mask token at position 8"),
            std::string::npos)
      << bad.status().to_string();

  s = sample();
  s.importance = {1.0f, 0.5f};
  bad = trace_layout(s, options());
  EXPECT_NE(bad.status().message().find("7 response tokens but 2 importance weights"),
            std::string::npos)
      << bad.status().to_string();

  EXPECT_EQ(trace_layout(sample(), options(0)).status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceLayoutTest, ImportanceWeightsFollowTheirTokensIntoTheViews) {
  TraceSample s = sample();
  s.importance = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
  auto layout = trace_layout(s, options());
  ASSERT_TRUE(layout.ok()) << layout.status().to_string();
  for (const TraceView& v : layout->views) {
    ASSERT_EQ(v.importance.size(), v.old_log_probs.size());
    // sample() pairs log-prob -0.k with token k-1; the weight 0.k goes with it.
    for (std::size_t t = 0; t < v.importance.size(); ++t) {
      EXPECT_FLOAT_EQ(v.importance[t], -v.old_log_probs[t]);
    }
  }
  TraceSample plain = sample();
  auto unweighted = trace_layout(plain, options());
  ASSERT_TRUE(unweighted.ok());
  for (const TraceView& v : unweighted->views) {
    for (float w : v.importance) EXPECT_EQ(w, 1.0f);  // none given: every weight 1
  }
}

}  // namespace
}  // namespace dice
