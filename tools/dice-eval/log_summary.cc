#include "tools/dice-eval/log_summary.h"

#include <capnp/message.h>
#include <unistd.h>

#include <chrono>

#include "rewardlog/reader.h"
#include "rewardlog/writer.h"

namespace dice::eval {
namespace {

std::int64_t unix_millis_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

constexpr char kNoteStart[] = "dice-eval table of ";

Result<rewardlog::LogRecord> metric(const std::string& run_id, const std::string& name,
                                    double value, std::int64_t now) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<schema::MetricRecord>();
  record.setRunId(run_id);
  record.setName(name);
  record.setStep(0);
  record.setValue(value);
  record.setUnixMillis(now);
  return rewardlog::encode_record(record.asReader());
}

}  // namespace

std::vector<std::pair<std::string, double>> table_metrics(const TableMeta& meta,
                                                          const EvalTable& table) {
  std::vector<std::pair<std::string, double>> out;
  for (const TableRow& r : table.rows) {
    std::string where = std::string("eval/") + kind_name(r.kind);
    if (r.level != kAllLevels) where += "/level_" + level_label(r.level);
    std::vector<std::pair<std::string, double>> cells = {
        {"exec", r.exec},
        {"fast_0", r.fast_0},
        {"fast_1", r.fast_1},
        {"fast_2", r.fast_2},
        {"fast_1_raw", r.fast_1_raw},
        {"fast_2_raw", r.fast_2_raw},
        {"geo_mean_speedup", r.geo_mean_speedup},
        {"tasks", r.problems},
        {"timed", r.timed},
        {"compiled", r.compiled},
        {"rewarded", r.rewarded},
        {"incomplete", r.incomplete},
        {"own_kernels_exec", r.own_kernels_only.exec},
        {"own_kernels_fast_1", r.own_kernels_only.fast_1},
        {"own_kernels_fast_2", r.own_kernels_only.fast_2},
    };
    for (int k : meta.pass_k) {
      auto found = r.pass_at_k.find(k);
      cells.emplace_back("pass_at_" + std::to_string(k),
                         found == r.pass_at_k.end() ? 0.0 : found->second);
    }
    for (auto& [measure, value] : cells) out.emplace_back(where + "/" + measure, value);
  }
  return out;
}

Status check_table_run_id(const std::string& log_path, const std::string& run_id) {
  rewardlog::RewardLogReaderOptions options;
  options.path = log_path;
  auto reader = rewardlog::RewardLogReader::open(options);
  if (reader.status().code() == StatusCode::kNotFound) return Status::ok_status();
  DICE_RETURN_IF_ERROR(reader.status());
  auto run = (*reader)->run(run_id);
  if (run.status().code() == StatusCode::kNotFound) return Status::ok_status();
  DICE_RETURN_IF_ERROR(run.status());
  if (std::string(run->get().getNote().cStr()).rfind(kNoteStart, 0) == 0) {
    return Status::ok_status();
  }
  return Status::invalid_argument("reward log " + log_path + " holds a run '" + run_id +
                                  "' that is not a dice-eval table: give the evaluation "
                                  "another --id");
}

std::string summary_note(const TableMeta& meta) {
  std::string note = kNoteStart + meta.model + " on " + meta.problem_set + " (" + meta.decoding +
                     ", " + std::to_string(meta.samples) + " per problem); verdicts in runs";
  for (const std::string& run : meta.runs) note += " " + run;
  note += "; " +
          (meta.reward_mode == "full" ? "reward mode full" : reward_mode_warning(meta.reward_mode));
  return note;
}

Status write_table_to_log(const std::string& log_path, const TableMeta& meta,
                          const EvalTable& table, const std::string& config_yaml) {
  DICE_RETURN_IF_ERROR(check_table_run_id(log_path, meta.evaluation_id));
  const std::int64_t now = unix_millis_now();
  std::vector<rewardlog::LogRecord> records;
  {
    capnp::MallocMessageBuilder message;
    auto run = message.initRoot<schema::RunRecord>();
    run.setRunId(meta.evaluation_id);
    run.setStartedUnixMillis(now);
    run.setConfigYaml(config_yaml);
    run.setHost(host_name());
    run.setNote(summary_note(meta));
    DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord encoded, rewardlog::encode_record(run.asReader()));
    records.push_back(std::move(encoded));
  }
  for (const auto& [name, value] : table_metrics(meta, table)) {
    DICE_ASSIGN_OR_RETURN(rewardlog::LogRecord encoded,
                          metric(meta.evaluation_id, name, value, now));
    records.push_back(std::move(encoded));
  }
  rewardlog::RewardLogOptions options;
  options.path = log_path;
  DICE_ASSIGN_OR_RETURN(auto writer, rewardlog::RewardLogWriter::open(options));
  Status appended = writer->append(std::move(records));
  Status closed = writer->close();
  DICE_RETURN_IF_ERROR(appended);
  return closed;
}

}  // namespace dice::eval
