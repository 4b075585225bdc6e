#include "tests/schemas/schema_fixtures.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/schemas/schema_fixture_values.h"

namespace dice::test {

std::string fixture_text(const char* field, std::uint32_t salt) {
  return std::string(field) + "-" + std::to_string(salt) + " \xce\xbb \"q\"\n\tend";
}

void fill_task(schema::Task::Builder b, std::uint32_t salt) {
  b.setId(txt("task.id", salt));
  b.setPhase(schema::Phase::E2E);
  b.setLevel(static_cast<std::uint8_t>(salt % 3 + 1));
  b.setPrompt(txt("task.prompt", salt));
  b.setReferenceSource(txt("task.referenceSource", salt));
  b.setInfillPrefix(txt("task.infillPrefix", salt));
  b.setInfillSuffix(txt("task.infillSuffix", salt));
  b.setTimeoutSeconds(f32(salt, 7));
  auto variants = b.initShapeVariants(2);
  for (unsigned i = 0; i < 2; ++i) {
    auto size = variants[i].initSizes(1)[0];
    size.setName(txt("task.sizeName", salt + i));
    size.setValue(i64(salt, 8 + i));
  }
  b.setWantTiming(false);  // its default is true
  auto policy = b.initRewardPolicy();
  policy.setKind(schema::RewardPolicyKind::SPEEDUP_THRESHOLD);
  policy.setMinSpeedup(1.0 + f32(salt, 11));
}
void expect_task(schema::Task::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getId().cStr(), txt("task.id", salt));
  EXPECT_EQ(r.getPhase(), schema::Phase::E2E);
  EXPECT_EQ(r.getLevel(), salt % 3 + 1);
  EXPECT_EQ(r.getPrompt().cStr(), txt("task.prompt", salt));
  EXPECT_EQ(r.getReferenceSource().cStr(), txt("task.referenceSource", salt));
  EXPECT_EQ(r.getInfillPrefix().cStr(), txt("task.infillPrefix", salt));
  EXPECT_EQ(r.getInfillSuffix().cStr(), txt("task.infillSuffix", salt));
  EXPECT_EQ(r.getTimeoutSeconds(), f32(salt, 7));
  ASSERT_EQ(r.getShapeVariants().size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    ASSERT_EQ(r.getShapeVariants()[i].getSizes().size(), 1u);
    EXPECT_EQ(r.getShapeVariants()[i].getSizes()[0].getName().cStr(),
              txt("task.sizeName", salt + i));
    EXPECT_EQ(r.getShapeVariants()[i].getSizes()[0].getValue(), i64(salt, 8 + i));
  }
  EXPECT_FALSE(r.getWantTiming());
  EXPECT_EQ(r.getRewardPolicy().getKind(), schema::RewardPolicyKind::SPEEDUP_THRESHOLD);
  EXPECT_EQ(r.getRewardPolicy().getMinSpeedup(), 1.0 + f32(salt, 11));
}

void fill_sampling_params(schema::SamplingParams::Builder b, std::uint32_t salt) {
  b.setTemperature(0.7f);
  b.setTopP(0.95f);
  b.setTopK(u32(salt, 2));
  b.setMaxNewTokens(1234);
  b.setBlockSize(8);
  b.setDenoisingSteps(2);
  b.setRemasking(schema::Remasking::ENTROPY_BOUNDED);
  b.setThreshold(0.75f);
  b.setObsoleteSeed(u64(salt, 8));
  set_list(b.initStopTokenIds(3), tokens(salt, 3));
}
void expect_sampling_params(schema::SamplingParams::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getTemperature(), 0.7f);
  EXPECT_EQ(r.getTopP(), 0.95f);
  EXPECT_EQ(r.getTopK(), u32(salt, 2));
  EXPECT_EQ(r.getMaxNewTokens(), 1234u);
  EXPECT_EQ(r.getBlockSize(), 8u);
  EXPECT_EQ(r.getDenoisingSteps(), 2u);
  EXPECT_EQ(r.getRemasking(), schema::Remasking::ENTROPY_BOUNDED);
  EXPECT_EQ(r.getThreshold(), 0.75f);
  EXPECT_EQ(r.getObsoleteSeed(), u64(salt, 8));
  expect_list(r.getStopTokenIds(), tokens(salt, 3), "stopTokenIds");
}

void fill_rollout_request(schema::RolloutRequest::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
  b.setRunId(txt("rr.runId", salt));
  b.setStep(u64(salt, 2));
  b.setGroup(u64(salt, 3));
  fill_task(b.initTask(), salt + 1);
  b.setNumSamples(u32(salt, 5));
  fill_sampling_params(b.initSampling(), salt + 2);
  b.setMinPolicyVersion(u64(salt, 7));
  b.setWeightsDir(txt("req.weightsDir", salt));
}
void expect_rollout_request(schema::RolloutRequest::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
  EXPECT_EQ(r.getRunId().cStr(), txt("rr.runId", salt));
  EXPECT_EQ(r.getStep(), u64(salt, 2));
  EXPECT_EQ(r.getGroup(), u64(salt, 3));
  expect_task(r.getTask(), salt + 1);
  EXPECT_EQ(r.getNumSamples(), u32(salt, 5));
  expect_sampling_params(r.getSampling(), salt + 2);
  EXPECT_EQ(r.getMinPolicyVersion(), u64(salt, 7));
  EXPECT_EQ(r.getWeightsDir().cStr(), txt("req.weightsDir", salt));
}

void fill_candidate(schema::Candidate::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
  b.setRunId(txt("cand.runId", salt));
  b.setStep(u64(salt, 2));
  b.setTaskId(txt("cand.taskId", salt));
  b.setGroup(u64(salt, 4));
  b.setSampleIndex(u32(salt, 5));
  b.setPolicyVersion(u64(salt, 6));
  set_list(b.initPromptTokenIds(5), tokens(salt, 5));
  set_list(b.initTokenIds(9), tokens(salt + 1, 9));
  b.setText(txt("cand.text", salt));
  std::vector<std::uint16_t> steps;
  std::vector<float> logprobs;
  for (int i = 0; i < 9; ++i) {
    steps.push_back(static_cast<std::uint16_t>((salt + i) % 4 + 1));
    logprobs.push_back(-0.5f - i * 0.125f);
  }
  set_list(b.initUnmaskStep(9), steps);
  set_list(b.initTokenLogProbs(9), logprobs);
  b.setFinishReason(schema::Candidate::FinishReason::MAX_TOKENS);
  b.setGenerationSeconds(f32(salt, 13));
  b.setRolloutWorker(txt("cand.rolloutWorker", salt));
  set_list(b.initTailTokenIds(2), tokens(salt + 2, 2));
  set_list(b.initTailUnmaskStep(2),
           std::vector<std::uint16_t>{static_cast<std::uint16_t>(salt % 4 + 1), 3});
  b.setWeightsChecksum(u64(salt, 17));
  set_list(b.initTokenTextEnds(9), ends_of(salt));
}
void expect_candidate(schema::Candidate::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
  EXPECT_EQ(r.getRunId().cStr(), txt("cand.runId", salt));
  EXPECT_EQ(r.getStep(), u64(salt, 2));
  EXPECT_EQ(r.getTaskId().cStr(), txt("cand.taskId", salt));
  EXPECT_EQ(r.getGroup(), u64(salt, 4));
  EXPECT_EQ(r.getSampleIndex(), u32(salt, 5));
  EXPECT_EQ(r.getPolicyVersion(), u64(salt, 6));
  expect_list(r.getPromptTokenIds(), tokens(salt, 5), "promptTokenIds");
  expect_list(r.getTokenIds(), tokens(salt + 1, 9), "tokenIds");
  EXPECT_EQ(r.getText().cStr(), txt("cand.text", salt));
  ASSERT_EQ(r.getUnmaskStep().size(), 9u);
  ASSERT_EQ(r.getTokenLogProbs().size(), 9u);
  for (unsigned i = 0; i < 9; ++i) {
    EXPECT_EQ(r.getUnmaskStep()[i], (salt + i) % 4 + 1) << "unmaskStep[" << i << "]";
    EXPECT_EQ(r.getTokenLogProbs()[i], -0.5f - i * 0.125f) << "tokenLogProbs[" << i << "]";
  }
  EXPECT_EQ(r.getFinishReason(), schema::Candidate::FinishReason::MAX_TOKENS);
  EXPECT_EQ(r.getGenerationSeconds(), f32(salt, 13));
  EXPECT_EQ(r.getRolloutWorker().cStr(), txt("cand.rolloutWorker", salt));
  expect_list(r.getTailTokenIds(), tokens(salt + 2, 2), "tailTokenIds");
  ASSERT_EQ(r.getTailUnmaskStep().size(), 2u);
  EXPECT_EQ(r.getTailUnmaskStep()[0], salt % 4 + 1);
  EXPECT_EQ(r.getTailUnmaskStep()[1], 3u);
  EXPECT_EQ(r.getWeightsChecksum(), u64(salt, 17));
  expect_list(r.getTokenTextEnds(), ends_of(salt), "tokenTextEnds");
}

void fill_eval_request(schema::EvalRequest::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
  fill_task(b.initTask(), salt + 1);
  fill_candidate(b.initCandidate(), salt + 2);
}
void expect_eval_request(schema::EvalRequest::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
  expect_task(r.getTask(), salt + 1);
  expect_candidate(r.getCandidate(), salt + 2);
}

void fill_finding(schema::Finding::Builder b, std::uint32_t salt) {
  b.setCheck(txt("finding.check", salt));
  b.setDetail(txt("finding.detail", salt));
  b.setFatal(true);
}
void expect_finding(schema::Finding::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getCheck().cStr(), txt("finding.check", salt));
  EXPECT_EQ(r.getDetail().cStr(), txt("finding.detail", salt));
  EXPECT_TRUE(r.getFatal());
}

void fill_timings(schema::Timings::Builder b, std::uint32_t salt) {
  b.setCompileSeconds(f32(salt, 0));
  b.setEvalSeconds(f32(salt, 1));
  b.setKernelMsMean(f32(salt, 2));
  b.setKernelMsStd(f32(salt, 3));
  b.setReferenceMsMean(f32(salt, 4));
  b.setReferenceMsStd(f32(salt, 5));
  b.setTimingTrials(u32(salt, 6));
}
void expect_timings(schema::Timings::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getCompileSeconds(), f32(salt, 0));
  EXPECT_EQ(r.getEvalSeconds(), f32(salt, 1));
  EXPECT_EQ(r.getKernelMsMean(), f32(salt, 2));
  EXPECT_EQ(r.getKernelMsStd(), f32(salt, 3));
  EXPECT_EQ(r.getReferenceMsMean(), f32(salt, 4));
  EXPECT_EQ(r.getReferenceMsStd(), f32(salt, 5));
  EXPECT_EQ(r.getTimingTrials(), u32(salt, 6));
}

void fill_verdict(schema::Verdict::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
  b.setRunId(txt("verdict.runId", salt));
  b.setStep(u64(salt, 2));
  b.setTaskId(txt("verdict.taskId", salt));
  b.setGroup(u64(salt, 4));
  b.setSampleIndex(u32(salt, 5));
  b.setPolicyVersion(u64(salt, 6));
  b.setCompiled(true);
  b.setCorrect(true);
  b.setReward(f32(salt, 9));
  b.setSpeedup(f32(salt, 10));
  fill_timings(b.initTimings(), salt + 1);
  b.setFailure(schema::FailureClass::ANTI_CHEAT);
  b.setLogExcerpt(txt("verdict.logExcerpt", salt));
  auto findings = b.initFindings(2);
  fill_finding(findings[0], salt + 2);
  fill_finding(findings[1], salt + 3);
  b.setObsoleteSourceHash(txt("verdict.sourceHash", salt));
  b.setCorrectnessTrials(u32(salt, 16));
  b.setMaxAbsError(f32(salt, 17));
  b.setRewardWorker(txt("verdict.rewardWorker", salt));
  b.setGpuSlot(txt("verdict.gpuSlot", salt));
  auto builds = b.initBuilds(2);
  for (unsigned i = 0; i < 2; ++i) {
    builds[i].setSourceHash(txt("verdict.build.sourceHash", salt + i));
    builds[i].setCompiled(true);
    builds[i].setCompileSeconds(f32(salt, 20 + i));
    builds[i].setLog(txt("verdict.build.log", salt + i));
  }
  b.setEvaluatedSource(txt("verdict.evaluatedSource", salt));
  b.setReusedFrom(u64(salt, 22));
  b.setRetriedAfter(txt("verdict.retriedAfter", salt));
}
void expect_verdict(schema::Verdict::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
  EXPECT_EQ(r.getRunId().cStr(), txt("verdict.runId", salt));
  EXPECT_EQ(r.getStep(), u64(salt, 2));
  EXPECT_EQ(r.getTaskId().cStr(), txt("verdict.taskId", salt));
  EXPECT_EQ(r.getGroup(), u64(salt, 4));
  EXPECT_EQ(r.getSampleIndex(), u32(salt, 5));
  EXPECT_EQ(r.getPolicyVersion(), u64(salt, 6));
  EXPECT_TRUE(r.getCompiled());
  EXPECT_TRUE(r.getCorrect());
  EXPECT_EQ(r.getReward(), f32(salt, 9));
  EXPECT_EQ(r.getSpeedup(), f32(salt, 10));
  expect_timings(r.getTimings(), salt + 1);
  EXPECT_EQ(r.getFailure(), schema::FailureClass::ANTI_CHEAT);
  EXPECT_EQ(r.getLogExcerpt().cStr(), txt("verdict.logExcerpt", salt));
  ASSERT_EQ(r.getFindings().size(), 2u);
  expect_finding(r.getFindings()[0], salt + 2);
  expect_finding(r.getFindings()[1], salt + 3);
  EXPECT_EQ(r.getObsoleteSourceHash().cStr(), txt("verdict.sourceHash", salt));
  EXPECT_EQ(r.getCorrectnessTrials(), u32(salt, 16));
  EXPECT_EQ(r.getMaxAbsError(), f32(salt, 17));
  EXPECT_EQ(r.getRewardWorker().cStr(), txt("verdict.rewardWorker", salt));
  EXPECT_EQ(r.getGpuSlot().cStr(), txt("verdict.gpuSlot", salt));
  ASSERT_EQ(r.getBuilds().size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_EQ(r.getBuilds()[i].getSourceHash().cStr(), txt("verdict.build.sourceHash", salt + i));
    EXPECT_TRUE(r.getBuilds()[i].getCompiled());
    EXPECT_EQ(r.getBuilds()[i].getCompileSeconds(), f32(salt, 20 + i));
    EXPECT_EQ(r.getBuilds()[i].getLog().cStr(), txt("verdict.build.log", salt + i));
  }
  EXPECT_EQ(r.getEvaluatedSource().cStr(), txt("verdict.evaluatedSource", salt));
  EXPECT_EQ(r.getReusedFrom(), u64(salt, 22));
  EXPECT_EQ(r.getRetriedAfter().cStr(), txt("verdict.retriedAfter", salt));
}

}  // namespace dice::test
