// Exports one run of a reward log as JSON Lines or CSV: the easy path for dashboards and
// notebooks (docs/REWARD_LOG.md describes both formats).
//
// JSONL: one object per line, {"kind": "run"|"step"|"candidate"|"kernel"|"metric"|"task",
// "record": R},
// where R is the record in Cap'n Proto's standard JSON mapping (capnp/compat/json.h): field names
// as in schemas/rewardlog.capnp (camelCase), enums as their names, 64-bit integers as decimal
// strings (JSON numbers cannot hold them exactly), NaN/Infinity as strings.
//
// CSV (RFC 4180): one table per export; a header row of dotted field paths ("verdict.taskId",
// "verdict.timings.kernelMsMean") in schema order, then one row per record. Lists are written as
// their JSON text; the long free-text fields (kCsvOmittedFields) are left out: use JSONL for them.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "common/status.h"
#include "rewardlog/reader.h"

namespace dice::rewardlog {

enum class ExportFormat { kJsonl, kCsv };
enum class ExportTable {
  kAll,   // JSONL only: run, steps, candidates, the kernels they name, metrics, tasks
  kRuns,  // the run's RunRecord
  kSteps,
  kCandidates,
  kKernels,  // kernels named by the run's candidates (verdict.sourceHash), first-use order
  kMetrics,
  kTasks,  // the tasks the run met (TaskRecord), by task id
};

// Parse "jsonl"/"csv" and "all"/"runs"/"steps"/"candidates"/"kernels"/"metrics"/"tasks".
Status parse_export_format(std::string_view text, ExportFormat* format);
Status parse_export_table(std::string_view text, ExportTable* table);

// Fields that CSV leaves out because they hold whole files, logs or per-token lists.
inline constexpr std::string_view kCsvOmittedFields[] = {
    "configYaml",   "responseText", "evaluatedSource", "source",
    "compileLog",   "logExcerpt",   "referenceSource", "infillPrefix",
    "infillSuffix", "unmaskStep",   "tokenTextEnds"};

struct ExportOptions {
  // Output format. Default: jsonl.
  ExportFormat format = ExportFormat::kJsonl;
  // Which records. kAll is JSONL only. Default: all.
  ExportTable table = ExportTable::kAll;
};

// Writes the run's records to `out`. NotFound if the log has nothing for the run;
// InvalidArgument for CSV with kAll; Corruption (naming the key) for damaged records; IOError if
// `out` fails.
Status export_run(RewardLogReader& reader, std::string_view run_id, const ExportOptions& options,
                  std::ostream& out);

// One record as the JSON object used in "record" above (no newline).
std::string record_to_json(schema::RunRecord::Reader record);
std::string record_to_json(schema::StepRecord::Reader record);
std::string record_to_json(schema::CandidateRecord::Reader record);
std::string record_to_json(schema::KernelRecord::Reader record);
std::string record_to_json(schema::MetricRecord::Reader record);
std::string record_to_json(schema::TaskRecord::Reader record);

// Quotes a CSV field when it needs it (comma, quote, CR or LF), doubling inner quotes.
std::string csv_field(std::string_view text);

}  // namespace dice::rewardlog
