// dice-log, run as a real process against a real reward log.
#include <capnp/compat/json.h>
#include <capnp/message.h>
#include <fcntl.h>
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <spawn.h>
#include <sys/wait.h>
#include <algorithm>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "rewardlog/writer.h"
#include "tests/rewardlog/rewardlog_test_util.h"

extern char** environ;

namespace dice::rewardlog {
namespace {

using testing::candidate_record;
using testing::kernel_record;
using testing::metric_record;
using testing::run_record;
using testing::step_record;
using testing::task_record;
using testing::TempDir;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

CommandResult dice_log(const TempDir& dir, const std::vector<std::string>& args) {
  const std::string out_path = dir.sub("stdout.txt");
  const std::string err_path = dir.sub("stderr.txt");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<std::string> argv_strings = {DICE_LOG_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);
  CommandResult result;
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, DICE_LOG_BINARY, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    ADD_FAILURE() << "cannot start " << DICE_LOG_BINARY;
    return result;
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  result.exit_code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

// RFC 4180 reader for checking dice-log's CSV (a test double of a spreadsheet's parser).
std::vector<std::vector<std::string>> parse_csv_for_test(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        field.push_back('"');
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        field.push_back(c);
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field);
      field.clear();
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field);
      field.clear();
      rows.emplace_back();
      ++i;
    } else {
      field.push_back(c);
    }
  }
  if (rows.back().empty() && field.empty()) rows.pop_back();
  return rows;
}

const std::string kTrickyResponse =
    "```cuda\n__global__ void k(float* x) { x[0] = 1.0f; }\t// \"quoted\", back\\slash\n```"
    "\x01 caf\xc3\xa9 \xe2\x9c\x93";

class DiceLogCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    log_ = dir_.sub("log");
    RewardLogOptions options;
    options.path = log_;
    auto writer = RewardLogWriter::open(options);
    ASSERT_TRUE(writer.ok()) << writer.status().to_string();
    std::vector<LogRecord> records;
    records.push_back(run_record("run-a", "first, \"best\" run"));
    records.push_back(run_record("run-b"));
    hash_ = kernel_record("__global__ void k(){}").key;
    for (uint64_t step = 0; step < 3; ++step) {
      records.push_back(step_record("run-a", step, 0.5f * step));
      for (const char* task : {"t1", "t2"}) {
        for (uint32_t sample = 0; sample < 2; ++sample) {
          records.push_back(candidate_record("run-a", step, task, sample, hash_, kTrickyResponse));
        }
      }
      records.push_back(metric_record("run-a", "loss", step, 1.0 / (step + 1)));
    }
    records.push_back(kernel_record("__global__ void k(){}"));
    records.push_back(task_record("run-a", "t1", "1", "class Model: pass\n"));
    records.push_back(task_record("run-b", "t1", "2", "not run-a's"));
    ASSERT_TRUE((*writer)->append(std::move(records)).ok());
    ASSERT_TRUE((*writer)->close().ok());
  }

  TempDir dir_;
  std::string log_;
  std::string hash_;
};

TEST_F(DiceLogCliTest, HelpExitsZero) {
  const CommandResult r = dice_log(dir_, {"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("usage: dice-log"), std::string::npos);
  EXPECT_NE(r.out.find("export LOG RUN"), std::string::npos);
}

TEST_F(DiceLogCliTest, BadArgumentsExitTwoWithAMessage) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "missing COMMAND"},
      {{"frobnicate", log_}, "unknown command \"frobnicate\""},
      {{"steps", log_}, "expected LOG RUN"},
      {{"runs", log_, "extra"}, "expected LOG"},
      {{"candidates", log_, "run-a", "--step", "x1"}, "--step \"x1\""},
      {{"candidates", log_, "run-a", "--step"}, "--step needs a value"},
      {{"candidates", log_, "run-a", "--colour=red"}, "unknown option --colour"},
      {{"steps", log_, "run-a", "--task", "t1"}, "unknown option --task"},
      {{"export", log_, "run-a", "--format", "xml"}, "--format \"xml\""},
      {{"export", log_, "run-a", "--format=csv", "--table=all"}, "CSV holds one table"},
      {{"export", log_, "run-a", "--table", "everything"}, "--table \"everything\""},
  };
  for (const auto& [args, message] : cases) {
    const CommandResult r = dice_log(dir_, args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << "stderr: " << r.err;
  }
}

TEST_F(DiceLogCliTest, MissingLogExitsOneNamingThePath) {
  const CommandResult r = dice_log(dir_, {"runs", dir_.sub("nope")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(dir_.sub("nope")), std::string::npos) << r.err;
  const CommandResult unknown_run = dice_log(dir_, {"steps", log_, "run-z"});
  EXPECT_EQ(unknown_run.exit_code, 1);
  EXPECT_NE(unknown_run.err.find("run-z"), std::string::npos) << unknown_run.err;
}

TEST_F(DiceLogCliTest, RunsStepsCandidatesAndKernel) {
  CommandResult r = dice_log(dir_, {"runs", log_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines = split(r.out, '\n');
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(split(lines[0], '\t')[0], "run");
  EXPECT_EQ(split(lines[1], '\t')[0], "run-a");
  EXPECT_EQ(split(lines[1], '\t')[1], "2025-11-29T23:46:40Z");
  EXPECT_EQ(split(lines[2], '\t')[0], "run-b");

  r = dice_log(dir_, {"steps", log_, "run-a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = split(r.out, '\n');
  ASSERT_EQ(lines.size(), 4u);
  const std::vector<std::string> header = split(lines[0], '\t');
  const auto column = [&](const std::string& name) {
    const auto at = std::find(header.begin(), header.end(), name);
    EXPECT_NE(at, header.end()) << name;
    return static_cast<size_t>(at - header.begin());
  };
  // Step 0 was written before the exploration counts, the clip fraction and the internal errors:
  // not measured.
  const std::vector<std::vector<std::string>> explored = {
      {"nan", "0", "0", "-", "0", "-", "0", "-"},
      {"0.125", "4", "1", "1.25", "8", "1", "32", "0.03125"},  // (2 + 3) / 4 texts; 3 dropped
      {"0.25", "4", "2", "2.5", "8", "1", "64", "0.0625"},     // (8 + 2) / 4
  };
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = split(lines[i], '\t');
    ASSERT_EQ(cells.size(), header.size());
    EXPECT_EQ(cells[0], std::to_string(i - 1));
    EXPECT_EQ(cells[1], "e2e");
    EXPECT_EQ(cells[7], i == 1 ? "0" : i == 2 ? "0.5" : "1");  // mean_reward 0.5 * step
    EXPECT_EQ(cells[column("staleness_max")], "0");            // the synchronous loop
    const std::vector<std::string> want = explored[i - 1];
    EXPECT_EQ(cells[column("clip_fraction")], want[0]) << lines[i];
    EXPECT_EQ(cells[column("groups_judged")], want[1]) << lines[i];
    EXPECT_EQ(cells[column("groups_mixed")], want[2]) << lines[i];
    EXPECT_EQ(cells[column("distinct_texts")], want[3]) << lines[i];
    EXPECT_EQ(cells[column("group_size")], want[4]) << lines[i];
    EXPECT_EQ(cells[column("dropped_distinct_texts")], want[5]) << lines[i];
    EXPECT_EQ(cells[column("internal_errors")], want[6]) << lines[i];
    EXPECT_EQ(cells[column("internal_error_share")], want[7]) << lines[i];
  }

  r = dice_log(dir_, {"candidates", log_, "run-a", "--step=1", "--task", "t2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  lines = split(r.out, '\n');
  ASSERT_EQ(lines.size(), 3u);
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> cells = split(lines[i], '\t');
    EXPECT_EQ(cells[0], "1");
    EXPECT_EQ(cells[1], "t2");
    EXPECT_EQ(cells[2], std::to_string(i - 1));
    EXPECT_EQ(cells[7], i == 1 ? "none" : "incorrect");
    EXPECT_EQ(cells[9], hash_);
  }

  r = dice_log(dir_, {"kernel", log_, hash_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("source_hash: " + hash_), std::string::npos);
  EXPECT_NE(r.out.find("__global__ void k(){}"), std::string::npos);
  EXPECT_EQ(dice_log(dir_, {"kernel", log_, std::string(40, 'a')}).exit_code, 1);
}

TEST_F(DiceLogCliTest, ExportJsonlParsesBackToTheRecords) {
  const CommandResult r = dice_log(dir_, {"export", log_, "run-a", "--format", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  capnp::JsonCodec json;
  std::map<std::string, int> kinds;
  int candidates_checked = 0;
  for (const std::string& line : split(r.out, '\n')) {
    capnp::MallocMessageBuilder message;
    auto value = message.initRoot<capnp::JsonValue>();
    json.decodeRaw(kj::ArrayPtr<const char>(line.data(), line.size()), value);
    ASSERT_TRUE(value.isObject()) << line;
    auto fields = value.getObject();
    ASSERT_EQ(fields.size(), 2u);
    ASSERT_EQ(std::string(fields[0].getName().cStr()), "kind");
    const std::string kind = fields[0].getValue().getString().cStr();
    ++kinds[kind];
    ASSERT_EQ(std::string(fields[1].getName().cStr()), "record");
    if (kind == "step") {
      capnp::MallocMessageBuilder decoded;
      auto step = decoded.initRoot<schema::StepRecord>();
      json.decode(fields[1].getValue(), capnp::toDynamic(step));
      EXPECT_STREQ(step.getRunId().cStr(), "run-a");
      EXPECT_FLOAT_EQ(step.getMeanReward(), 0.5f * step.getStep());
    } else if (kind == "candidate") {
      capnp::MallocMessageBuilder decoded;
      auto candidate = decoded.initRoot<schema::CandidateRecord>();
      json.decode(fields[1].getValue(), capnp::toDynamic(candidate));
      EXPECT_EQ(std::string(candidate.getResponseText().cStr()), kTrickyResponse);
      EXPECT_STREQ(candidate.getVerdict().getFindings()[0].getCheck().cStr(),
                   "torch-op-in-forward");
      ++candidates_checked;
    } else if (kind == "task") {
      capnp::MallocMessageBuilder decoded;
      auto task = decoded.initRoot<schema::TaskRecord>();
      json.decode(fields[1].getValue(), capnp::toDynamic(task));
      EXPECT_STREQ(task.getReferenceSource().cStr(), "class Model: pass\n");
      EXPECT_STREQ(task.getLevel().cStr(), "1");
    }
  }
  EXPECT_EQ(kinds["run"], 1);
  EXPECT_EQ(kinds["step"], 3);
  EXPECT_EQ(kinds["candidate"], 12);
  EXPECT_EQ(kinds["kernel"], 1);
  EXPECT_EQ(kinds["metric"], 3);
  EXPECT_EQ(kinds["task"], 1);
  EXPECT_EQ(candidates_checked, 12);
}

TEST_F(DiceLogCliTest, ExportCsvToAFile) {
  const std::string out = dir_.sub("candidates.csv");
  const CommandResult r = dice_log(dir_, {"export", log_, "run-a", "--format=csv", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.out.empty());
  const auto rows = parse_csv_for_test(read_file(out));
  ASSERT_EQ(rows.size(), 13u);  // header + 12 candidates
  const std::vector<std::string>& header = rows[0];
  std::map<std::string, size_t> column;
  for (size_t i = 0; i < header.size(); ++i) column[header[i]] = i;
  ASSERT_TRUE(column.count("verdict.taskId"));
  ASSERT_TRUE(column.count("verdict.timings.kernelMsMean"));
  ASSERT_TRUE(column.count("verdict.findings"));
  EXPECT_FALSE(column.count("responseText"));  // long text is JSONL-only
  for (size_t i = 1; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), header.size()) << "row " << i;
    EXPECT_EQ(rows[i][column["verdict.runId"]], "run-a");
    EXPECT_EQ(rows[i][column["verdict.timings.kernelMsMean"]], "0.125");
    // Lists are their JSON text: the quotes inside the detail string stay JSON-escaped.
    EXPECT_NE(rows[i][column["verdict.findings"]].find(R"(line 3: \"torch.matmul\"\tin)"),
              std::string::npos)
        << rows[i][column["verdict.findings"]];
  }
  EXPECT_EQ(rows[1][column["verdict.failure"]], "none");
  EXPECT_EQ(rows[2][column["verdict.failure"]], "incorrect");

  const CommandResult steps =
      dice_log(dir_, {"export", log_, "run-a", "--format=csv", "--table=steps"});
  ASSERT_EQ(steps.exit_code, 0) << steps.err;
  EXPECT_EQ(parse_csv_for_test(steps.out).size(), 4u);
}

TEST_F(DiceLogCliTest, CorruptRecordExitsOneNamingTheKey) {
  testing::put_raw_value(log_, Family::kSteps, step_key("run-a", 1), "junk!!!!");
  const CommandResult r = dice_log(dir_, {"steps", log_, "run-a"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("corruption"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("steps/run-a/step=1"), std::string::npos) << r.err;
  const std::string out = dir_.sub("export.jsonl");
  EXPECT_EQ(dice_log(dir_, {"export", log_, "run-a", "--out", out}).exit_code, 1);
  std::ifstream partial(out);
  EXPECT_FALSE(partial.good()) << "a failed export must not leave a file behind";
}

}  // namespace
}  // namespace dice::rewardlog
