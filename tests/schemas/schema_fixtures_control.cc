// Fixtures of control.capnp and rewardlog.capnp structs, the Envelope, and the coverage check.
#include <gtest/gtest.h>

#include <vector>

#include "tests/schemas/schema_fixture_values.h"
#include "tests/schemas/schema_fixtures.h"

namespace dice::test {

void fill_hello(schema::Hello::Builder b, std::uint32_t salt) {
  b.setWorkerId(txt("hello.workerId", salt));
  b.setRole(schema::Role::REWARD);
  b.setNode(txt("hello.node", salt));
  b.setPid(u32(salt, 3));
  auto slots = b.initGpuSlots(2);
  slots.set(0, txt("hello.gpuSlot0", salt));
  slots.set(1, txt("hello.gpuSlot1", salt));
  b.setCapacity(u32(salt, 5));
  b.setPolicyVersion(u64(salt, 6));
  b.setMetricsEndpoint(txt("hello.metricsEndpoint", salt));
}
void expect_hello(schema::Hello::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkerId().cStr(), txt("hello.workerId", salt));
  EXPECT_EQ(r.getRole(), schema::Role::REWARD);
  EXPECT_EQ(r.getNode().cStr(), txt("hello.node", salt));
  EXPECT_EQ(r.getPid(), u32(salt, 3));
  ASSERT_EQ(r.getGpuSlots().size(), 2u);
  EXPECT_EQ(r.getGpuSlots()[0].cStr(), txt("hello.gpuSlot0", salt));
  EXPECT_EQ(r.getGpuSlots()[1].cStr(), txt("hello.gpuSlot1", salt));
  EXPECT_EQ(r.getCapacity(), u32(salt, 5));
  EXPECT_EQ(r.getPolicyVersion(), u64(salt, 6));
  EXPECT_EQ(r.getMetricsEndpoint().cStr(), txt("hello.metricsEndpoint", salt));
}

void fill_heartbeat(schema::Heartbeat::Builder b, std::uint32_t salt) {
  b.setWorkerId(txt("hb.workerId", salt));
  b.setState(schema::WorkerState::UPDATING_WEIGHTS);
  b.setInFlight(u32(salt, 2));
  b.setCompleted(u64(salt, 3));
  b.setPolicyVersion(u64(salt, 4));
  b.setUnixMillis(i64(salt, 5));
}
void expect_heartbeat(schema::Heartbeat::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkerId().cStr(), txt("hb.workerId", salt));
  EXPECT_EQ(r.getState(), schema::WorkerState::UPDATING_WEIGHTS);
  EXPECT_EQ(r.getInFlight(), u32(salt, 2));
  EXPECT_EQ(r.getCompleted(), u64(salt, 3));
  EXPECT_EQ(r.getPolicyVersion(), u64(salt, 4));
  EXPECT_EQ(r.getUnixMillis(), i64(salt, 5));
}

void fill_credit(schema::Credit::Builder b, std::uint32_t salt) {
  b.setWorkerId(txt("credit.workerId", salt));
  b.setCredits(u32(salt, 1));
}
void expect_credit(schema::Credit::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkerId().cStr(), txt("credit.workerId", salt));
  EXPECT_EQ(r.getCredits(), u32(salt, 1));
}

void fill_ack(schema::Ack::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
  b.setCredits(u32(salt, 1));
}
void expect_ack(schema::Ack::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
  EXPECT_EQ(r.getCredits(), u32(salt, 1));
}

void fill_weights_update(schema::WeightsUpdate::Builder b, std::uint32_t salt, bool nccl) {
  b.setPolicyVersion(u64(salt, 0));
  if (nccl) {
    auto n = b.initNccl();
    const std::vector<kj::byte> id = {0x00, 0xff, 0x7f, 0x80, static_cast<kj::byte>(salt)};
    n.setUniqueId(kj::arrayPtr(id.data(), id.size()));
    n.setWorldSize(u32(salt, 1));
    n.setRank(u32(salt, 2));
    auto tensors = n.initTensors(2);
    for (unsigned i = 0; i < 2; ++i) {
      tensors[i].setName(txt("tensor.name", salt + i));
      tensors[i].setDtype(txt("tensor.dtype", salt + i));
      set_list(tensors[i].initShape(3), std::vector<std::uint64_t>{u64(salt, i), 4096, 1ull << 40});
    }
    auto ids = n.initWorkerIds(2);
    for (unsigned i = 0; i < 2; ++i) ids.set(i, txt("wu.workerId", salt + i));
    n.setFallbackDir(txt("wu.fallbackDir", salt));
    n.setTimeoutMs(u32(salt, 3));
  } else {
    b.setCheckpointDir(txt("wu.checkpointDir", salt));
  }
  b.setAbortInFlight(true);
}
void expect_weights_update(schema::WeightsUpdate::Reader r, std::uint32_t salt, bool nccl) {
  EXPECT_EQ(r.getPolicyVersion(), u64(salt, 0));
  EXPECT_TRUE(r.getAbortInFlight());
  if (!nccl) {
    ASSERT_EQ(r.which(), schema::WeightsUpdate::CHECKPOINT_DIR);
    EXPECT_EQ(r.getCheckpointDir().cStr(), txt("wu.checkpointDir", salt));
    return;
  }
  ASSERT_EQ(r.which(), schema::WeightsUpdate::NCCL);
  auto n = r.getNccl();
  const std::vector<kj::byte> id = {0x00, 0xff, 0x7f, 0x80, static_cast<kj::byte>(salt)};
  expect_list(n.getUniqueId(), id, "uniqueId");
  EXPECT_EQ(n.getWorldSize(), u32(salt, 1));
  EXPECT_EQ(n.getRank(), u32(salt, 2));
  ASSERT_EQ(n.getTensors().size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    auto t = n.getTensors()[i];
    EXPECT_EQ(t.getName().cStr(), txt("tensor.name", salt + i));
    EXPECT_EQ(t.getDtype().cStr(), txt("tensor.dtype", salt + i));
    expect_list(t.getShape(), std::vector<std::uint64_t>{u64(salt, i), 4096, 1ull << 40}, "shape");
  }
  ASSERT_EQ(n.getWorkerIds().size(), 2u);
  for (unsigned i = 0; i < 2; ++i) {
    EXPECT_EQ(n.getWorkerIds()[i].cStr(), txt("wu.workerId", salt + i));
  }
  EXPECT_EQ(n.getFallbackDir().cStr(), txt("wu.fallbackDir", salt));
  EXPECT_EQ(n.getTimeoutMs(), u32(salt, 3));
}

void fill_shutdown(schema::Shutdown::Builder b, std::uint32_t salt) {
  b.setDrain(true);
  b.setReason(txt("shutdown.reason", salt));
}
void expect_shutdown(schema::Shutdown::Reader r, std::uint32_t salt) {
  EXPECT_TRUE(r.getDrain());
  EXPECT_EQ(r.getReason().cStr(), txt("shutdown.reason", salt));
}

void fill_error(schema::Error::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
  b.setMessage(txt("error.message", salt));
}
void expect_error(schema::Error::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
  EXPECT_EQ(r.getMessage().cStr(), txt("error.message", salt));
}

void fill_cancel(schema::Cancel::Builder b, std::uint32_t salt) {
  b.setWorkId(u64(salt, 0));
}
void expect_cancel(schema::Cancel::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getWorkId(), u64(salt, 0));
}

void fill_run_record(schema::RunRecord::Builder b, std::uint32_t salt) {
  b.setRunId(txt("run.runId", salt));
  b.setStartedUnixMillis(i64(salt, 1));
  b.setConfigYaml(txt("run.configYaml", salt));
  b.setGitRevision(txt("run.gitRevision", salt));
  b.setHost(txt("run.host", salt));
  b.setNote(txt("run.note", salt));
}
void expect_run_record(schema::RunRecord::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getRunId().cStr(), txt("run.runId", salt));
  EXPECT_EQ(r.getStartedUnixMillis(), i64(salt, 1));
  EXPECT_EQ(r.getConfigYaml().cStr(), txt("run.configYaml", salt));
  EXPECT_EQ(r.getGitRevision().cStr(), txt("run.gitRevision", salt));
  EXPECT_EQ(r.getHost().cStr(), txt("run.host", salt));
  EXPECT_EQ(r.getNote().cStr(), txt("run.note", salt));
}

void fill_step_record(schema::StepRecord::Builder b, std::uint32_t salt) {
  b.setRunId(txt("step.runId", salt));
  b.setStep(u64(salt, 1));
  b.setPhase(schema::Phase::E2E);
  b.setPolicyVersion(u64(salt, 3));
  b.setNumTasks(u32(salt, 4));
  b.setNumCandidates(u32(salt, 5));
  b.setNumCompiled(u32(salt, 6));
  b.setNumCorrect(u32(salt, 7));
  b.setMeanReward(f32(salt, 8));
  b.setNumGroupsDropped(u32(salt, 9));
  b.setLoss(f32(salt, 10));
  b.setKlDivergence(f32(salt, 11));
  b.setGradNorm(f32(salt, 12));
  b.setStartedUnixMillis(i64(salt, 13));
  b.setFinishedUnixMillis(i64(salt, 14));
  b.setPhaseName(txt("step.phaseName", salt));
  b.setEvaluation(true);
  b.setRewardMode(txt("step.rewardMode", salt));
  b.setStalenessMean(f32(salt, 18));
  b.setStalenessMax(u32(salt, 19));
  b.setRolloutAhead(u32(salt, 20));
  b.setClipFraction(f32(salt, 21));
  b.setGroupSize(u32(salt, 22));
  b.setGroupsJudged(u32(salt, 23));
  b.setGroupsMixed(u32(salt, 24));
  b.setJudgedSamples(u32(salt, 25));
  b.setDistinctTexts(u32(salt, 26));
  b.setDroppedGroupsJudged(u32(salt, 27));
  b.setDroppedDistinctTexts(u32(salt, 28));
  b.setNumInternalErrors(u32(salt, 29));
  b.setInternalErrorShare(f32(salt, 30));
}
void expect_step_record(schema::StepRecord::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getRunId().cStr(), txt("step.runId", salt));
  EXPECT_EQ(r.getStep(), u64(salt, 1));
  EXPECT_EQ(r.getPhase(), schema::Phase::E2E);
  EXPECT_EQ(r.getPolicyVersion(), u64(salt, 3));
  EXPECT_EQ(r.getNumTasks(), u32(salt, 4));
  EXPECT_EQ(r.getNumCandidates(), u32(salt, 5));
  EXPECT_EQ(r.getNumCompiled(), u32(salt, 6));
  EXPECT_EQ(r.getNumCorrect(), u32(salt, 7));
  EXPECT_EQ(r.getMeanReward(), f32(salt, 8));
  EXPECT_EQ(r.getNumGroupsDropped(), u32(salt, 9));
  EXPECT_EQ(r.getLoss(), f32(salt, 10));
  EXPECT_EQ(r.getKlDivergence(), f32(salt, 11));
  EXPECT_EQ(r.getGradNorm(), f32(salt, 12));
  EXPECT_EQ(r.getStartedUnixMillis(), i64(salt, 13));
  EXPECT_EQ(r.getFinishedUnixMillis(), i64(salt, 14));
  EXPECT_EQ(r.getPhaseName().cStr(), txt("step.phaseName", salt));
  EXPECT_TRUE(r.getEvaluation());
  EXPECT_EQ(r.getRewardMode().cStr(), txt("step.rewardMode", salt));
  EXPECT_EQ(r.getStalenessMean(), f32(salt, 18));
  EXPECT_EQ(r.getStalenessMax(), u32(salt, 19));
  EXPECT_EQ(r.getRolloutAhead(), u32(salt, 20));
  EXPECT_EQ(r.getClipFraction(), f32(salt, 21));
  EXPECT_EQ(r.getGroupSize(), u32(salt, 22));
  EXPECT_EQ(r.getGroupsJudged(), u32(salt, 23));
  EXPECT_EQ(r.getGroupsMixed(), u32(salt, 24));
  EXPECT_EQ(r.getJudgedSamples(), u32(salt, 25));
  EXPECT_EQ(r.getDistinctTexts(), u32(salt, 26));
  EXPECT_EQ(r.getDroppedGroupsJudged(), u32(salt, 27));
  EXPECT_EQ(r.getDroppedDistinctTexts(), u32(salt, 28));
  EXPECT_EQ(r.getNumInternalErrors(), u32(salt, 29));
  EXPECT_EQ(r.getInternalErrorShare(), f32(salt, 30));
}

void fill_candidate_record(schema::CandidateRecord::Builder b, std::uint32_t salt) {
  fill_verdict(b.initVerdict(), salt + 1);
  b.setResponseText(txt("cr.responseText", salt));
  b.setEvaluatedSource(txt("cr.evaluatedSource", salt));
  b.setAdvantage(-f32(salt, 3));
  b.setWrittenUnixMillis(i64(salt, 4));
  b.setWeightsChecksum(u64(salt, 5));
  b.setRolloutWorker(txt("cr.rolloutWorker", salt));
  set_list(b.initUnmaskStep(4),
           std::vector<std::uint16_t>{3, 0, 2, static_cast<std::uint16_t>(salt % 4)});
  set_list(b.initTokenTextEnds(4), ends_of(salt, 4));
}
void expect_candidate_record(schema::CandidateRecord::Reader r, std::uint32_t salt) {
  expect_verdict(r.getVerdict(), salt + 1);
  EXPECT_EQ(r.getResponseText().cStr(), txt("cr.responseText", salt));
  EXPECT_EQ(r.getEvaluatedSource().cStr(), txt("cr.evaluatedSource", salt));
  EXPECT_EQ(r.getAdvantage(), -f32(salt, 3));
  EXPECT_EQ(r.getWrittenUnixMillis(), i64(salt, 4));
  EXPECT_EQ(r.getWeightsChecksum(), u64(salt, 5));
  EXPECT_EQ(r.getRolloutWorker().cStr(), txt("cr.rolloutWorker", salt));
  expect_list(r.getUnmaskStep(),
              std::vector<std::uint16_t>{3, 0, 2, static_cast<std::uint16_t>(salt % 4)},
              "unmaskStep");
  expect_list(r.getTokenTextEnds(), ends_of(salt, 4), "tokenTextEnds");
}

void fill_task_record(schema::TaskRecord::Builder b, std::uint32_t salt) {
  b.setRunId(txt("tr.runId", salt));
  b.setTaskId(txt("tr.taskId", salt));
  b.setPhase(schema::Phase::E2E);
  b.setLevel(txt("tr.level", salt));
  b.setReferenceSource(txt("tr.referenceSource", salt));
  b.setInfillPrefix(txt("tr.infillPrefix", salt));
  b.setInfillSuffix(txt("tr.infillSuffix", salt));
  b.setFirstStep(u64(salt, 7));
  b.setWrittenUnixMillis(i64(salt, 8));
}
void expect_task_record(schema::TaskRecord::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getRunId().cStr(), txt("tr.runId", salt));
  EXPECT_EQ(r.getTaskId().cStr(), txt("tr.taskId", salt));
  EXPECT_EQ(r.getPhase(), schema::Phase::E2E);
  EXPECT_EQ(r.getLevel().cStr(), txt("tr.level", salt));
  EXPECT_EQ(r.getReferenceSource().cStr(), txt("tr.referenceSource", salt));
  EXPECT_EQ(r.getInfillPrefix().cStr(), txt("tr.infillPrefix", salt));
  EXPECT_EQ(r.getInfillSuffix().cStr(), txt("tr.infillSuffix", salt));
  EXPECT_EQ(r.getFirstStep(), u64(salt, 7));
  EXPECT_EQ(r.getWrittenUnixMillis(), i64(salt, 8));
}

void fill_kernel_record(schema::KernelRecord::Builder b, std::uint32_t salt) {
  b.setSourceHash(txt("kr.sourceHash", salt));
  b.setObsoleteSource(txt("kr.source", salt));
  b.setObsoleteCompileFlags(txt("kr.compileFlags", salt));
  b.setObsoleteToolchain(txt("kr.toolchain", salt));
  b.setCompiled(true);
  b.setCompileLog(txt("kr.compileLog", salt));
  b.setCompileSeconds(f32(salt, 6));
  b.setFirstSeenRunId(txt("kr.firstSeenRunId", salt));
  b.setFirstSeenUnixMillis(i64(salt, 8));
}
void expect_kernel_record(schema::KernelRecord::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getSourceHash().cStr(), txt("kr.sourceHash", salt));
  EXPECT_EQ(r.getObsoleteSource().cStr(), txt("kr.source", salt));
  EXPECT_EQ(r.getObsoleteCompileFlags().cStr(), txt("kr.compileFlags", salt));
  EXPECT_EQ(r.getObsoleteToolchain().cStr(), txt("kr.toolchain", salt));
  EXPECT_TRUE(r.getCompiled());
  EXPECT_EQ(r.getCompileLog().cStr(), txt("kr.compileLog", salt));
  EXPECT_EQ(r.getCompileSeconds(), f32(salt, 6));
  EXPECT_EQ(r.getFirstSeenRunId().cStr(), txt("kr.firstSeenRunId", salt));
  EXPECT_EQ(r.getFirstSeenUnixMillis(), i64(salt, 8));
}

void fill_metric_record(schema::MetricRecord::Builder b, std::uint32_t salt) {
  b.setRunId(txt("metric.runId", salt));
  b.setName(txt("metric.name", salt));
  b.setStep(u64(salt, 2));
  b.setValue(3.14159265358979 + salt);
  b.setUnixMillis(i64(salt, 4));
}
void expect_metric_record(schema::MetricRecord::Reader r, std::uint32_t salt) {
  EXPECT_EQ(r.getRunId().cStr(), txt("metric.runId", salt));
  EXPECT_EQ(r.getName().cStr(), txt("metric.name", salt));
  EXPECT_EQ(r.getStep(), u64(salt, 2));
  EXPECT_EQ(r.getValue(), 3.14159265358979 + salt);
  EXPECT_EQ(r.getUnixMillis(), i64(salt, 4));
}

void fill_envelope(schema::Envelope::Builder b, std::uint32_t salt,
                   schema::Envelope::Body::Which which) {
  using B = schema::Envelope::Body;
  b.setProtocolVersion(schema::PROTOCOL_VERSION);
  b.setSenderId(txt("env.senderId", salt));
  b.setRunId(txt("env.runId", salt));
  b.setSentUnixMillis(i64(salt, 3));
  fill_ack(b.initAck(), salt + 2);
  auto body = b.getBody();
  const std::uint32_t s = salt + 1;
  switch (which) {
    case B::HELLO:
      fill_hello(body.initHello(), s);
      break;
    case B::HEARTBEAT:
      fill_heartbeat(body.initHeartbeat(), s);
      break;
    case B::CREDIT:
      fill_credit(body.initCredit(), s);
      break;
    case B::ACK:
      fill_ack(body.initAck(), s);
      break;
    case B::ROLLOUT_REQUEST:
      fill_rollout_request(body.initRolloutRequest(), s);
      break;
    case B::CANDIDATE:
      fill_candidate(body.initCandidate(), s);
      break;
    case B::EVAL_REQUEST:
      fill_eval_request(body.initEvalRequest(), s);
      break;
    case B::VERDICT:
      fill_verdict(body.initVerdict(), s);
      break;
    case B::WEIGHTS_UPDATE:
      fill_weights_update(body.initWeightsUpdate(), s, true);
      break;
    case B::SHUTDOWN:
      fill_shutdown(body.initShutdown(), s);
      break;
    case B::ERROR:
      fill_error(body.initError(), s);
      break;
    case B::CANCEL:
      fill_cancel(body.initCancel(), s);
      break;
  }
}
void expect_envelope(schema::Envelope::Reader r, std::uint32_t salt,
                     schema::Envelope::Body::Which which) {
  using B = schema::Envelope::Body;
  EXPECT_EQ(r.getProtocolVersion(), schema::PROTOCOL_VERSION);
  EXPECT_EQ(r.getSenderId().cStr(), txt("env.senderId", salt));
  EXPECT_EQ(r.getRunId().cStr(), txt("env.runId", salt));
  EXPECT_EQ(r.getSentUnixMillis(), i64(salt, 3));
  ASSERT_TRUE(r.hasAck());
  expect_ack(r.getAck(), salt + 2);
  auto body = r.getBody();
  ASSERT_EQ(body.which(), which);
  const std::uint32_t s = salt + 1;
  switch (which) {
    case B::HELLO:
      expect_hello(body.getHello(), s);
      break;
    case B::HEARTBEAT:
      expect_heartbeat(body.getHeartbeat(), s);
      break;
    case B::CREDIT:
      expect_credit(body.getCredit(), s);
      break;
    case B::ACK:
      expect_ack(body.getAck(), s);
      break;
    case B::ROLLOUT_REQUEST:
      expect_rollout_request(body.getRolloutRequest(), s);
      break;
    case B::CANDIDATE:
      expect_candidate(body.getCandidate(), s);
      break;
    case B::EVAL_REQUEST:
      expect_eval_request(body.getEvalRequest(), s);
      break;
    case B::VERDICT:
      expect_verdict(body.getVerdict(), s);
      break;
    case B::WEIGHTS_UPDATE:
      expect_weights_update(body.getWeightsUpdate(), s, true);
      break;
    case B::SHUTDOWN:
      expect_shutdown(body.getShutdown(), s);
      break;
    case B::ERROR:
      expect_error(body.getError(), s);
      break;
    case B::CANCEL:
      expect_cancel(body.getCancel(), s);
      break;
  }
}

void expect_no_default_fields(capnp::DynamicStruct::Reader value, const std::string& path) {
  auto check = [&](capnp::StructSchema::Field field) {
    const std::string name = path + "." + field.getProto().getName().cStr();
    const capnp::Type type = field.getType();
    if (type.isStruct()) {  // nested structs and groups: every field inside must be set too
      expect_no_default_fields(value.get(field).as<capnp::DynamicStruct>(), name);
      return;
    }
    EXPECT_TRUE(value.has(field, capnp::HasMode::NON_DEFAULT)) << name << " holds its default";
    if (type.isList() && type.asList().getElementType().isStruct()) {
      auto list = value.get(field).as<capnp::DynamicList>();
      for (unsigned i = 0; i < list.size(); ++i) {
        expect_no_default_fields(list[i].as<capnp::DynamicStruct>(),
                                 name + "[" + std::to_string(i) + "]");
      }
    }
  };
  for (auto field : value.getSchema().getNonUnionFields()) check(field);
  KJ_IF_MAYBE (field, value.which()) {
    check(*field);
  }
}

}  // namespace dice::test
