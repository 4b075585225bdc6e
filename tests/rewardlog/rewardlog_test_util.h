// Test helpers for the reward log suites: temporary directories and record builders.
#pragma once

#include <capnp/message.h>
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <cstdint>
#include <string>

#include "common/hash/content_hash.h"
#include "rewardlog/record_codec.h"
#include "tests/support/temp_dir.h"

namespace dice::rewardlog::testing {

// A fresh directory under $TMPDIR, removed with everything in it on destruction.
class TempDir : public testing_util::TempDir {
 public:
  TempDir() : testing_util::TempDir("dice-rewardlog-test") {}
};

inline LogRecord must(Result<LogRecord> record) {
  if (!record.ok()) {
    ADD_FAILURE() << record.status().to_string();
    return {};
  }
  return std::move(record).value();
}

inline LogRecord run_record(const std::string& run_id, const std::string& note = "") {
  capnp::MallocMessageBuilder m;
  auto r = m.initRoot<schema::RunRecord>();
  r.setRunId(run_id);
  r.setStartedUnixMillis(1764460000000);
  r.setConfigYaml("learner:\n  lr: 1e-6\n");
  r.setHost("node-1");
  r.setNote(note);
  return must(encode_record(r.asReader()));
}

inline LogRecord step_record(const std::string& run_id, uint64_t step, float mean_reward = 0.25f) {
  capnp::MallocMessageBuilder m;
  auto s = m.initRoot<schema::StepRecord>();
  s.setRunId(run_id);
  s.setStep(step);
  s.setPhase(schema::Phase::E2E);
  s.setPolicyVersion(step + 1);
  s.setNumTasks(64);
  s.setNumCandidates(1024);
  s.setNumCompiled(700);
  s.setNumCorrect(static_cast<uint32_t>(step % 1000));
  s.setMeanReward(mean_reward);
  s.setLoss(0.5f);
  s.setStartedUnixMillis(1764460000000 + static_cast<int64_t>(step) * 60000);
  s.setFinishedUnixMillis(1764460000000 + static_cast<int64_t>(step) * 60000 + 42000);
  if (step > 0 && step < 4) {
    // Step 0 is as a log from before the clip fraction, the exploration counts and the internal
    // errors; steps 1-3: 4 judged groups of 8, `step` of them mixed with 2 * step texts each,
    // the others dropped, one text eight times.
    s.setClipFraction(0.125f * step);
    s.setGroupSize(8);
    s.setGroupsJudged(4);
    s.setGroupsMixed(static_cast<uint32_t>(step));
    s.setJudgedSamples(32);
    s.setDistinctTexts(static_cast<uint32_t>(2 * step * step + (4 - step)));
    s.setDroppedGroupsJudged(static_cast<uint32_t>(4 - step));
    s.setDroppedDistinctTexts(static_cast<uint32_t>(4 - step));
    // Steps 1-3: 32 * step of the 1024 verdicts were internal errors (step 0: from before it).
    s.setNumInternalErrors(static_cast<uint32_t>(32 * step));
    s.setInternalErrorShare(static_cast<float>(32 * step) / 1024.0f);
  }
  return must(encode_record(s.asReader()));
}

inline LogRecord candidate_record(
    const std::string& run_id, uint64_t step, const std::string& task_id, uint32_t sample,
    const std::string& source_hash = "",
    const std::string& response = "```cuda\n__global__ void k(){}\n```") {
  capnp::MallocMessageBuilder m;
  auto c = m.initRoot<schema::CandidateRecord>();
  auto v = c.initVerdict();
  v.setRunId(run_id);
  v.setStep(step);
  v.setTaskId(task_id);
  v.setSampleIndex(sample);
  v.setCompiled(true);
  v.setCorrect(sample % 2 == 0);
  v.setReward(sample % 2 == 0 ? 1.0f : 0.0f);
  v.setFailure(sample % 2 == 0 ? schema::FailureClass::NONE : schema::FailureClass::INCORRECT);
  if (!source_hash.empty()) v.initBuilds(1)[0].setSourceHash(source_hash);
  v.initTimings().setKernelMsMean(0.125f);
  auto findings = v.initFindings(1);
  findings[0].setCheck("torch-op-in-forward");
  findings[0].setDetail("line 3: \"torch.matmul\"\tin forward, comma, here");
  c.setResponseText(response);
  c.setAdvantage(sample % 2 == 0 ? 1.0f : -1.0f);
  return must(encode_record(c.asReader()));
}

inline LogRecord kernel_record(const std::string& source, const std::string& run_id = "run-a") {
  capnp::MallocMessageBuilder m;
  auto k = m.initRoot<schema::KernelRecord>();
  k.setSourceHash(kernel_source_hash(source, "-O3", "nvcc 13.0 sm_90"));
  k.setCompileLog("nvcc: " + source);
  k.setCompiled(true);
  k.setCompileSeconds(44.5f);
  k.setFirstSeenRunId(run_id);
  return must(encode_record(k.asReader()));
}

inline LogRecord metric_record(const std::string& run_id, const std::string& name, uint64_t step,
                               double value) {
  capnp::MallocMessageBuilder m;
  auto r = m.initRoot<schema::MetricRecord>();
  r.setRunId(run_id);
  r.setName(name);
  r.setStep(step);
  r.setValue(value);
  return must(encode_record(r.asReader()));
}

inline LogRecord task_record(const std::string& run_id, const std::string& task_id,
                             const std::string& level, const std::string& reference) {
  capnp::MallocMessageBuilder m;
  auto r = m.initRoot<schema::TaskRecord>();
  r.setRunId(run_id);
  r.setTaskId(task_id);
  r.setLevel(level);
  r.setReferenceSource(reference);
  return must(encode_record(r.asReader()));
}

// Writes `value` under `key` in `family` of the closed log at `path` with RocksDB directly,
// bypassing the codec, as disk damage or a foreign writer would: how the tests put a damaged
// record into a log.
inline void put_raw_value(const std::string& path, Family family, const std::string& key,
                          const std::string& value) {
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions());
  for (Family f : kAllFamilies)
    descriptors.emplace_back(family_name(f), rocksdb::ColumnFamilyOptions());
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, descriptors, &handles, &db).ok());
  ASSERT_TRUE(
      db->Put(rocksdb::WriteOptions(), handles[1 + static_cast<size_t>(family)], key, value).ok());
  for (auto* handle : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(handle).ok());
  delete db;
}

}  // namespace dice::rewardlog::testing
