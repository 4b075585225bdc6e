// Column families and key layout of the reward log. docs/REWARD_LOG.md repeats this for readers
// that do not use dice's code; schemas/rewardlog.capnp names the value struct of each family.
//
// Integers in keys are big-endian so that RocksDB's bytewise order is numeric order; text parts
// end in a 0x00 byte, so ids and names must not contain 0x00 (encode_record() rejects them).
//
//   runs        +--------+
//               | run id |                                  value: RunRecord
//               +--------+
//   steps       +--------+----+--------------+
//               | run id | 00 | step u64 BE  |              value: StepRecord
//               +--------+----+--------------+
//   candidates  +--------+----+--------------+---------+----+----------------+
//               | run id | 00 | step u64 BE  | task id | 00 | sample u32 BE  |  CandidateRecord
//               +--------+----+--------------+---------+----+----------------+
//   kernels     +-----------------------------+
//               | source hash, lowercase hex  |           value: KernelRecord
//               +-----------------------------+
//   metrics     +--------+----+-------------+----+--------------+
//               | run id | 00 | metric name | 00 | step u64 BE  |  value: MetricRecord
//               +--------+----+-------------+----+--------------+
//   tasks       +--------+----+---------+
//               | run id | 00 | task id |                   value: TaskRecord
//               +--------+----+---------+
//
// So a run's steps, candidates, metrics and tasks are each one contiguous key range starting
// with "run id" 00, sorted by step (then task id and sample), by metric name then step, or by
// task id. "tasks" came later than the other families: logs written before it lack it, and
// readers open it only where it exists (kOptionalFamilies).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "schemas/verdict.capnp.h"

namespace dice::rewardlog {

enum class Family { kRuns, kSteps, kCandidates, kKernels, kMetrics, kTasks };

inline constexpr std::array<Family, 6> kAllFamilies = {Family::kRuns,       Family::kSteps,
                                                       Family::kCandidates, Family::kKernels,
                                                       Family::kMetrics,    Family::kTasks};

// Families a log written by an older dice lacks: the writer creates them on open, a reader
// reads them as empty when they are not there.
inline constexpr std::array<Family, 1> kOptionalFamilies = {Family::kTasks};
bool is_optional_family(Family family);

// The RocksDB column family name: "runs", "steps", "candidates", "kernels", "metrics", "tasks".
const char* family_name(Family family);

// Key of the format marker in RocksDB's "default" column family; its value is kFormatVersion.
inline constexpr std::string_view kFormatKey = "dice.rewardlog.format";
inline constexpr std::string_view kFormatVersion = "1";

// Checks that `value` can be a text part of a key: not empty and without 0x00 bytes. `what`
// names the field in the error ("runId").
Status check_key_text(std::string_view what, std::string_view value);
// Checks that a kernel hash is non-empty lowercase hex.
Status check_source_hash(std::string_view hash);

std::string run_key(std::string_view run_id);
std::string step_key(std::string_view run_id, uint64_t step);
std::string candidate_key(std::string_view run_id, uint64_t step, std::string_view task_id,
                          uint32_t sample);
std::string kernel_key(std::string_view source_hash);
// The kernel keys a verdict names: its builds' source hashes that are valid keys, in build order.
std::vector<std::string> verdict_kernel_keys(schema::Verdict::Reader verdict);
std::string metric_key(std::string_view run_id, std::string_view name, uint64_t step);
std::string task_key(std::string_view run_id, std::string_view task_id);

// Prefixes for range scans: every key of the run in steps/candidates/metrics ("run id" 00);
// every candidate of one step; every candidate of one task in one step; one metric's series.
// A run's tasks are run_prefix(run id).
std::string run_prefix(std::string_view run_id);
std::string candidate_step_prefix(std::string_view run_id, uint64_t step);
std::string candidate_task_prefix(std::string_view run_id, uint64_t step, std::string_view task_id);
std::string metric_name_prefix(std::string_view run_id, std::string_view name);

// A key split into its parts; fields a family does not use stay empty/zero.
struct KeyParts {
  std::string run_id;
  uint64_t step = 0;
  std::string task_id;  // candidates and tasks
  uint32_t sample = 0;
  std::string name;  // metric name
  std::string source_hash;
};
// Splits a key of `family`; nullopt if it does not have that family's layout.
std::optional<KeyParts> parse_key(Family family, std::string_view key);

// A readable name for a key in error messages, e.g. "candidates/run-7/step=3/task=17/sample=2";
// keys that do not parse are shown hex-escaped ("steps/<unparseable key \x00\x01>").
std::string describe_key(Family family, std::string_view key);

// Big-endian integer helpers (exposed for tests and tools).
void append_u64_be(std::string* out, uint64_t value);
void append_u32_be(std::string* out, uint32_t value);
uint64_t read_u64_be(std::string_view bytes);  // needs bytes.size() >= 8
uint32_t read_u32_be(std::string_view bytes);  // needs bytes.size() >= 4

}  // namespace dice::rewardlog
