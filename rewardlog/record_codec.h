// Values of the reward log: schema records <-> (column family, key, Cap'n Proto bytes).
//
// Each value is one message in Cap'n Proto's standard unpacked framing (the bytes
// capnp::messageToFlatArray writes), with the family's struct from schemas/rewardlog.capnp as
// root. The key is always derived from the record's own fields (see keys.h), so a record cannot be
// stored under the wrong key; decoding checks that again and reports a disagreement as corruption.
#pragma once

#include <capnp/serialize.h>

#include <memory>
#include <string>
#include <string_view>

#include "common/status.h"
#include "rewardlog/keys.h"
#include "schemas/rewardlog.capnp.h"

namespace dice::rewardlog {

// One key/value pair bound for one column family: what the writer stores.
struct LogRecord {
  Family family = Family::kRuns;
  std::string key;
  std::string value;  // Cap'n Proto message bytes
};

// Encodes a record under the key its fields determine. InvalidArgument when a key field is
// empty or holds a 0x00 byte (runId, verdict.taskId, taskId, metric name) or a kernel's sourceHash
// is not lowercase hex.
Result<LogRecord> encode_record(schema::RunRecord::Reader record);
Result<LogRecord> encode_record(schema::StepRecord::Reader record);
Result<LogRecord> encode_record(schema::CandidateRecord::Reader record);  // keyed by its verdict
Result<LogRecord> encode_record(schema::KernelRecord::Reader record);
Result<LogRecord> encode_record(schema::MetricRecord::Reader record);
Result<LogRecord> encode_record(schema::TaskRecord::Reader record);

// The column family that holds records of type T (schema::StepRecord -> Family::kSteps).
template <typename T>
struct FamilyOf;
template <>
struct FamilyOf<schema::RunRecord> {
  static constexpr Family kFamily = Family::kRuns;
};
template <>
struct FamilyOf<schema::StepRecord> {
  static constexpr Family kFamily = Family::kSteps;
};
template <>
struct FamilyOf<schema::CandidateRecord> {
  static constexpr Family kFamily = Family::kCandidates;
};
template <>
struct FamilyOf<schema::KernelRecord> {
  static constexpr Family kFamily = Family::kKernels;
};
template <>
struct FamilyOf<schema::MetricRecord> {
  static constexpr Family kFamily = Family::kMetrics;
};
template <>
struct FamilyOf<schema::TaskRecord> {
  static constexpr Family kFamily = Family::kTasks;
};

// A decoded record that owns its bytes; get() stays valid as long as this object lives (moves
// keep it valid too).
template <typename T>
class OwnedRecord {
 public:
  typename T::Reader get() const { return root_; }
  const std::string& key() const { return key_; }

 private:
  template <typename U>
  friend Result<OwnedRecord<U>> decode_record(std::string_view key, std::string_view value);
  OwnedRecord() = default;

  std::string key_;
  kj::Array<capnp::word> words_;
  std::unique_ptr<capnp::FlatArrayMessageReader> reader_;
  typename T::Reader root_;
};

// Decodes and fully validates a value read under `key` from FamilyOf<T>'s column family: the
// framing, every pointer and text field, and that the fields give back the same key. Any
// failure is Corruption naming the key, e.g. "steps/run-7/step=3: value does not decode: ...".
template <typename T>
Result<OwnedRecord<T>> decode_record(std::string_view key, std::string_view value);

}  // namespace dice::rewardlog
