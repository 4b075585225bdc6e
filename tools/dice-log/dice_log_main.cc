// dice-log: read a dice reward log from the shell. Opens the log as a RocksDB secondary, so it
// works while a run is writing. Exit status: 0 ok, 1 the log could not be read (missing, damaged,
// no such run/kernel), 2 bad command line.
#include <capnp/schema.h>
#include <kj/exception.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/durable_stream.h"
#include "common/status.h"
#include "net/wire/enum_name.h"
#include "rewardlog/export.h"
#include "rewardlog/reader.h"
#include "rewardlog/step_exploration.h"
#include "rewardlog/step_internal_errors.h"

namespace {

using dice::Result;
using dice::Status;
namespace rl = dice::rewardlog;

constexpr char kUsage[] = R"(usage: dice-log COMMAND LOG [ARGS] [OPTIONS]

Reads a dice reward log (a RocksDB directory), also while a run is writing it.

commands:
  runs LOG                          list runs: id, start time (UTC), host, git revision, note
  steps LOG RUN                     one line per step of RUN
  candidates LOG RUN [--step N] [--task ID]
                                    one line per candidate of RUN (optionally one step/task)
  kernel LOG HASH                   one compiled kernel: compiled or not, seconds, compile log
  metrics LOG RUN [--name NAME]     one line per metric value of RUN
  export LOG RUN [--format jsonl|csv] [--table TABLE] [--out FILE]
                                    write RUN's records as JSON Lines (default) or CSV.
                                    TABLE: all (JSONL default), runs, steps, candidates (CSV
                                    default), kernels, metrics, tasks. FILE is written whole and
                                    synced, or not at all, and the export stops before it leaves
                                    less than 1 GiB free on FILE's disk (default: standard output).

Tables are tab-separated with a header line. docs/REWARD_LOG.md describes both export formats.
exit status: 0 ok, 1 the log could not be read, 2 bad command line.
)";

// A usage error: message to stderr, exit 2.
struct UsageError {
  std::string message;
};

struct Args {
  std::string command;
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // "--step" -> "3"
};

// Options each command accepts (all take a value).
const std::map<std::string, std::vector<std::string>>& command_options() {
  static const auto* const kTable = new std::map<std::string, std::vector<std::string>>{
      {"runs", {}},   {"steps", {}},           {"candidates", {"--step", "--task"}},
      {"kernel", {}}, {"metrics", {"--name"}}, {"export", {"--format", "--table", "--out"}},
  };
  return *kTable;
}

Args parse_args(int argc, char** argv) {
  Args args;
  if (argc < 2) throw UsageError{"missing COMMAND"};
  args.command = argv[1];
  const auto known = command_options().find(args.command);
  if (known == command_options().end()) {
    throw UsageError{"unknown command \"" + args.command + "\""};
  }
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg.compare(0, 2, "--") != 0) {
      args.positional.push_back(arg);
      continue;
    }
    std::string value;
    bool has_value = false;
    const size_t eq = arg.find('=');
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    const std::vector<std::string>& allowed = known->second;
    if (std::find(allowed.begin(), allowed.end(), arg) == allowed.end()) {
      throw UsageError{args.command + ": unknown option " + arg};
    }
    if (!has_value) {
      if (i + 1 >= argc) throw UsageError{args.command + ": " + arg + " needs a value"};
      value = argv[++i];
    }
    if (args.options.count(arg)) throw UsageError{args.command + ": " + arg + " given twice"};
    args.options[arg] = value;
  }
  return args;
}

void expect_positional(const Args& args, const std::vector<std::string>& names) {
  if (args.positional.size() == names.size()) return;
  std::string expected;
  for (const std::string& name : names) expected += " " + name;
  throw UsageError{args.command + ": expected" + expected + ", got " +
                   std::to_string(args.positional.size()) + " argument(s)"};
}

std::optional<std::string> option(const Args& args, const std::string& name) {
  const auto it = args.options.find(name);
  if (it == args.options.end()) return std::nullopt;
  return it->second;
}

uint64_t parse_u64(const std::string& what, const std::string& text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
    throw UsageError{what + " \"" + text + "\": expected a non-negative integer"};
  }
  return value;
}

std::string utc_time(int64_t unix_millis) {
  if (unix_millis <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(unix_millis / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string num(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4g", value);
  return buf;
}

// Text fields may hold tabs and newlines; keep one record per line.
std::string cell(const char* text) {
  std::string out = *text ? text : "-";
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

// "a,b,c" (a candidate's kernel keys in one cell).
std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

using dice::wire::enum_name;

Result<std::unique_ptr<rl::RewardLogReader>> open_log(const std::string& path) {
  rl::RewardLogReaderOptions options;
  options.path = path;
  return rl::RewardLogReader::open(options);
}

Status cmd_runs(rl::RewardLogReader& log) {
  DICE_ASSIGN_OR_RETURN(auto runs, log.runs());
  std::cout << "run\tstarted\thost\tgit\tnote\n";
  for (const auto& run : runs) {
    const auto r = run.get();
    std::cout << cell(r.getRunId().cStr()) << '\t' << utc_time(r.getStartedUnixMillis()) << '\t'
              << cell(r.getHost().cStr()) << '\t' << cell(r.getGitRevision().cStr()) << '\t'
              << cell(r.getNote().cStr()) << '\n';
  }
  return Status::ok_status();
}

Status cmd_steps(rl::RewardLogReader& log, const std::string& run_id) {
  DICE_ASSIGN_OR_RETURN(auto steps, log.steps(run_id));
  if (steps.empty()) {
    DICE_RETURN_IF_ERROR(log.run(run_id).status());  // NotFound for an unknown run
  }
  // The exploration columns (rewardlog/step_exploration.h): judged groups, how many had mixed
  // rewards, the mean number of different texts per judged group and per dropped one ("-": none),
  // out of group_size. Then the verdicts the reward service could not reach and their share of
  // the step's verdicts ("-": a log from before the count; rewardlog/step_internal_errors.h).
  std::cout << "step\tphase\tpolicy\ttasks\tcandidates\tcompiled\tcorrect\tmean_reward"
               "\tdropped_groups\tloss\tkl\tgrad_norm\tclip_fraction\tseconds\tstaleness_mean"
               "\tstaleness_max\tgroups_judged\tgroups_mixed\tdistinct_texts\tgroup_size"
               "\tdropped_distinct_texts\tinternal_errors\tinternal_error_share\n";
  const auto measured = [](double value) { return std::isnan(value) ? "-" : num(value); };
  for (const auto& step : steps) {
    const auto s = step.get();
    const int64_t millis = s.getFinishedUnixMillis() - s.getStartedUnixMillis();
    const rl::ExplorationCounts explored = rl::exploration_counts(s);
    const rl::ExplorationRates rates = rl::exploration_rates(explored);
    const rl::StepInternalErrors faults = rl::step_internal_errors(s);
    std::cout << s.getStep() << '\t' << enum_name(s.getPhase()) << '\t' << s.getPolicyVersion()
              << '\t' << s.getNumTasks() << '\t' << s.getNumCandidates() << '\t'
              << s.getNumCompiled() << '\t' << s.getNumCorrect() << '\t' << num(s.getMeanReward())
              << '\t' << s.getNumGroupsDropped() << '\t' << num(s.getLoss()) << '\t'
              << num(s.getKlDivergence()) << '\t' << num(s.getGradNorm()) << '\t'
              << num(s.getClipFraction()) << '\t' << (millis > 0 ? num(millis / 1000.0) : "-")
              << '\t' << num(s.getStalenessMean()) << '\t' << s.getStalenessMax() << '\t'
              << explored.groups_judged << '\t' << explored.groups_mixed << '\t'
              << measured(rates.distinct_texts_mean) << '\t' << explored.group_size << '\t'
              << measured(rates.dropped_distinct_texts_mean) << '\t' << faults.count << '\t'
              << measured(faults.share) << '\n';
  }
  return Status::ok_status();
}

Status cmd_candidates(rl::RewardLogReader& log, const std::string& run_id,
                      const rl::CandidateFilter& filter) {
  std::cout << "step\ttask\tsample\tcompiled\tcorrect\treward\tadvantage\tfailure\tspeedup"
               "\tsource_hash\n";
  return log.for_each_candidate(
      run_id, filter, [](rl::OwnedRecord<dice::schema::CandidateRecord> c) {
        const auto v = c.get().getVerdict();
        std::cout << v.getStep() << '\t' << cell(v.getTaskId().cStr()) << '\t' << v.getSampleIndex()
                  << '\t' << (v.getCompiled() ? "yes" : "no") << '\t'
                  << (v.getCorrect() ? "yes" : "no") << '\t' << num(v.getReward()) << '\t'
                  << num(c.get().getAdvantage()) << '\t' << enum_name(v.getFailure()) << '\t'
                  << num(v.getSpeedup()) << '\t'
                  << cell(join(rl::verdict_kernel_keys(v), ",").c_str()) << '\n';
        return Status::ok_status();
      });
}

Status cmd_kernel(rl::RewardLogReader& log, const std::string& hash) {
  DICE_ASSIGN_OR_RETURN(auto kernel, log.kernel(hash));
  const auto k = kernel.get();
  std::cout << "source_hash: " << k.getSourceHash().cStr() << '\n'
            << "compiled: " << (k.getCompiled() ? "yes" : "no") << '\n'
            << "compile_seconds: " << num(k.getCompileSeconds()) << '\n'
            << "first_seen_run: " << k.getFirstSeenRunId().cStr() << '\n'
            << "first_seen: " << utc_time(k.getFirstSeenUnixMillis()) << '\n'
            << "--- compile log ---\n"
            << k.getCompileLog().cStr() << '\n';
  return Status::ok_status();
}

Status cmd_metrics(rl::RewardLogReader& log, const std::string& run_id,
                   const std::optional<std::string>& name) {
  DICE_ASSIGN_OR_RETURN(auto metrics, log.metrics(run_id, name));
  std::cout << "name\tstep\tvalue\ttime\n";
  for (const auto& metric : metrics) {
    const auto m = metric.get();
    // Shortest text that reads back as the same double.
    char value[40];
    for (int digits = 1; digits <= 17; ++digits) {
      std::snprintf(value, sizeof(value), "%.*g", digits, m.getValue());
      if (std::strtod(value, nullptr) == m.getValue()) break;
    }
    std::cout << cell(m.getName().cStr()) << '\t' << m.getStep() << '\t' << value << '\t'
              << utc_time(m.getUnixMillis()) << '\n';
  }
  return Status::ok_status();
}

// Export options from the flags; defaults: jsonl, all tables (candidates for CSV).
rl::ExportOptions export_options(const Args& args) {
  rl::ExportOptions options;
  if (auto format = option(args, "--format")) {
    if (!rl::parse_export_format(*format, &options.format).ok()) {
      throw UsageError{"export: --format \"" + *format + "\": expected jsonl or csv"};
    }
  }
  options.table = options.format == rl::ExportFormat::kCsv ? rl::ExportTable::kCandidates
                                                           : rl::ExportTable::kAll;
  if (auto table = option(args, "--table")) {
    if (!rl::parse_export_table(*table, &options.table).ok()) {
      throw UsageError{"export: --table \"" + *table +
                       "\": expected all, runs, steps, candidates, kernels, metrics or tasks"};
    }
  }
  if (options.format == rl::ExportFormat::kCsv && options.table == rl::ExportTable::kAll) {
    throw UsageError{
        "export: CSV holds one table: use --table runs|steps|candidates|kernels|metrics|tasks"};
  }
  return options;
}

// What `export --out` leaves free on FILE's disk: run.min_free_disk_mb's default.
constexpr std::uint64_t kExportMinFreeBytes = std::uint64_t{1024} << 20;

Status cmd_export(rl::RewardLogReader& log, const std::string& run_id,
                  const rl::ExportOptions& options, const Args& args) {
  const std::optional<std::string> out_path = option(args, "--out");
  if (!out_path) {
    DICE_RETURN_IF_ERROR(rl::export_run(log, run_id, options, std::cout));
    std::cout.flush();
    return std::cout ? Status::ok_status() : Status::io_error("writing standard output");
  }
  // Durable (common/durable_stream.h): FILE is the whole export or what it was before, also after
  // a crash or a power loss. An export may be written beside a running run: it stops before it
  // leaves less than kExportMinFreeBytes free on FILE's disk, where the run's reward log may be.
  dice::StreamWriteOptions writing;
  writing.file.min_free_bytes = kExportMinFreeBytes;
  writing.file.min_free_name = "dice-log export";
  return dice::write_stream_atomically(
             *out_path,
             [&](std::ostream& out) { return rl::export_run(log, run_id, options, out); }, writing)
      .with_context("--out " + *out_path);
}

int run(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || (i == 1 && arg == "help")) {
      std::cout << kUsage;
      return 0;
    }
  }
  const Args args = parse_args(argc, argv);
  const std::string& cmd = args.command;
  if (cmd == "runs") {
    expect_positional(args, {"LOG"});
  } else if (cmd == "kernel") {
    expect_positional(args, {"LOG", "HASH"});
  } else {
    expect_positional(args, {"LOG", "RUN"});
  }
  rl::CandidateFilter filter;
  if (auto step = option(args, "--step")) filter.step = parse_u64("--step", *step);
  if (auto task = option(args, "--task")) {
    if (task->empty()) throw UsageError{"candidates: --task is empty"};
    filter.task_id = *task;
  }
  // Flags are checked before the log is opened.
  const rl::ExportOptions exporting = cmd == "export" ? export_options(args) : rl::ExportOptions{};

  Result<std::unique_ptr<rl::RewardLogReader>> log = open_log(args.positional[0]);
  Status status = log.status();
  if (log.ok()) {
    rl::RewardLogReader& reader = **log;
    const std::string& arg = args.positional.size() > 1 ? args.positional[1] : "";
    if (cmd == "runs") {
      status = cmd_runs(reader);
    } else if (cmd == "steps") {
      status = cmd_steps(reader, arg);
    } else if (cmd == "candidates") {
      status = cmd_candidates(reader, arg, filter);
    } else if (cmd == "kernel") {
      status = cmd_kernel(reader, arg);
    } else if (cmd == "metrics") {
      status = cmd_metrics(reader, arg, option(args, "--name"));
    } else {
      status = cmd_export(reader, arg, exporting, args);
    }
  }
  if (!status.ok()) {
    std::cerr << "dice-log " << cmd << ": " << status.to_string() << '\n';
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& e) {
    std::cerr << "dice-log: " << e.message << "\nrun `dice-log --help` for usage\n";
    return 2;
  } catch (const kj::Exception& e) {
    std::cerr << "dice-log: internal error: " << e.getDescription().cStr() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "dice-log: internal error: " << e.what() << '\n';
    return 1;
  }
}
