// RewardLogReader: reads a reward log, also while a RewardLogWriter (in any process) writes it.
//
// The reader is a RocksDB secondary instance: it never takes the writer's lock and sees the
// writer's progress up to its last catch_up(). Dashboards, dice-log and tests use it.
//
// Every record is validated as it is read (record_codec.h): damaged bytes give a Corruption
// status naming the key, e.g. "corruption: reward log /runs/log: steps/run-7/step=3: ...".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "rewardlog/options.h"
#include "rewardlog/record_codec.h"

namespace dice::rewardlog {

struct DbHandles;

// Which candidates of a run to read; unset fields match everything.
struct CandidateFilter {
  std::optional<uint64_t> step;        // one step. Default: all steps
  std::optional<std::string> task_id;  // one task. Default: all tasks
};

class RewardLogReader {
 public:
  template <typename T>
  // Gets each record (moved in; keep it if you like); a non-ok return stops the scan and is
  // returned by it.
  using Visitor = std::function<Status(OwnedRecord<T>)>;

  // NotFound if there is no log at options.path; InvalidArgument if the directory is not a dice
  // reward log (missing column families, other format version). Optional families
  // (keys.h: kOptionalFamilies) are opened only where the log has them.
  static Result<std::unique_ptr<RewardLogReader>> open(const RewardLogReaderOptions& options);
  ~RewardLogReader();
  RewardLogReader(const RewardLogReader&) = delete;
  RewardLogReader& operator=(const RewardLogReader&) = delete;

  // Brings the view up to date with the writer: after ok, every record acknowledged before the
  // call is visible. The view does not move between calls. NotFound when the log was deleted or
  // replaced by another database at its path since it was opened: open it again.
  Status catch_up();

  // Every run, by run id.
  Result<std::vector<OwnedRecord<schema::RunRecord>>> runs();
  // One run; NotFound if it is not in the log.
  Result<OwnedRecord<schema::RunRecord>> run(std::string_view run_id);
  // The steps of a run, by step.
  Result<std::vector<OwnedRecord<schema::StepRecord>>> steps(std::string_view run_id);
  // The candidates of a run, by (step, task id, sample). Candidates carry whole responses, so
  // prefer the visitor form for large runs.
  Status for_each_candidate(std::string_view run_id, const CandidateFilter& filter,
                            const Visitor<schema::CandidateRecord>& visit);
  Result<std::vector<OwnedRecord<schema::CandidateRecord>>> candidates(
      std::string_view run_id, const CandidateFilter& filter = {});
  // One kernel by its source hash; NotFound if absent.
  Result<OwnedRecord<schema::KernelRecord>> kernel(std::string_view source_hash);
  // The metrics of a run, by (name, step); only `name`'s series when given.
  Result<std::vector<OwnedRecord<schema::MetricRecord>>> metrics(
      std::string_view run_id, const std::optional<std::string>& name = std::nullopt);

  // The tasks a run met (TaskRecord), by task id; none in a log older than the "tasks" family.
  Result<std::vector<OwnedRecord<schema::TaskRecord>>> tasks(std::string_view run_id);
  // One task of a run; NotFound if absent (also in a log older than the "tasks" family).
  Result<OwnedRecord<schema::TaskRecord>> task(std::string_view run_id, std::string_view task_id);

  const std::string& path() const { return path_; }

 private:
  RewardLogReader(std::string path, std::string secondary_path, bool owns_secondary_path,
                  std::unique_ptr<DbHandles> db);

  // Visits every record of FamilyOf<T> whose key starts with `prefix`, in key order; `want`
  // (if set) skips keys before decoding.
  template <typename T>
  Status scan(const std::string& prefix, const std::function<bool(std::string_view)>& want,
              const Visitor<T>& visit);
  template <typename T>
  Result<std::vector<OwnedRecord<T>>> collect(const std::string& prefix);
  template <typename T>
  Result<OwnedRecord<T>> get(const std::string& key);

  std::string path_;
  std::string secondary_path_;
  bool owns_secondary_path_ = false;
  std::string identity_;  // the IDENTITY file's text when opened: catch_up() sees a replaced log
  std::unique_ptr<DbHandles> db_;
};

}  // namespace dice::rewardlog
