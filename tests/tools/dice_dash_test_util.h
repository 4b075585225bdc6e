// Helpers of the dice-dash tests: a reward log written as a run writes it (RewardLogWriter, with
// the learner's own step and metric record builders), dice-dash started as a real process on a
// free port, and a plain HTTP/1.1 GET over a socket.
#pragma once

#include <capnp/message.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "learner/step/step_records.h"
#include "rewardlog/writer.h"
#include "tests/support/child_process.h"
#include "tests/support/free_port.h"
#include "tests/support/http_get.h"
#include "tests/support/temp_dir.h"

namespace dice::dash::testing {

using testing_util::http_get;
using testing_util::HttpResult;

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// dice-dash as a child process on a free port, ready (answering) when start() returns true.
class DashProcess {
 public:
  explicit DashProcess(const testing_util::TempDir& dir) : log_(dir.sub("dice-dash.log")) {}

  bool start(const std::vector<std::string>& logs, std::vector<std::string> flags = {}) {
    port_ = testing_util::free_port();
    flags.insert(flags.end(), {"--port", std::to_string(port_), "--refresh-ms", "0"});
    flags.insert(flags.end(), logs.begin(), logs.end());
    process_ = std::make_unique<testing_util::ChildProcess>(DICE_DASH_BINARY, flags, log_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (read_text(log_).find("dice-dash: serving http://") != std::string::npos) return true;
      if (process_->wait_exit(std::chrono::milliseconds(20)) != -1) break;
    }
    ADD_FAILURE() << "dice-dash did not start; its output:\n" << read_text(log_);
    return false;
  }

  int port() const { return port_; }
  std::string output() const { return read_text(log_); }
  testing_util::ChildProcess& process() { return *process_; }

 private:
  std::string log_;
  int port_ = 0;
  std::unique_ptr<testing_util::ChildProcess> process_;
};

// One candidate as the learner logs it (learner/step/step_records.cc: group_records).
struct CandidateSpec {
  std::string task;
  uint32_t sample = 0;
  schema::FailureClass failure = schema::FailureClass::NONE;
  float speedup = 0;
  std::vector<std::string> findings;
  uint64_t policy_version = 0;
  float compile_seconds = 0;
  float eval_seconds = 0;
};

inline rewardlog::LogRecord must(Result<rewardlog::LogRecord> record) {
  EXPECT_TRUE(record.ok()) << record.status().to_string();
  return record.ok() ? std::move(record).value() : rewardlog::LogRecord{};
}

inline std::string kernel_hash(const std::string& task, uint32_t sample, uint64_t step) {
  // 40 lowercase hex digits, distinct per candidate.
  std::ostringstream hex;
  hex << std::hex;
  for (char c : task + "-" + std::to_string(sample) + "-" + std::to_string(step)) {
    hex << (static_cast<int>(c) & 0xf);
  }
  std::string hash = hex.str();
  hash.resize(40, 'a');
  return hash;
}

// A candidate's response: its source in a fence, and a line with a two-byte UTF-8 character.
inline std::string trace_response(const std::string& source) {
  return "```python\n" + source + "```\n# caf\xc3\xa9\n";
}

// Where the fixture's tokens of `response` end: every 5 bytes, plus one end between the two bytes
// of its "é" (as when byte-level BPE splits a character across two tokens).
inline std::vector<uint32_t> trace_token_ends(const std::string& response) {
  std::vector<uint32_t> ends;
  const uint32_t inside = static_cast<uint32_t>(response.find("\xc3\xa9") + 1);
  for (uint32_t end = 5; end < response.size() + 5; end += 5) {
    if (ends.empty() || ends.back() < inside) {
      if (end > inside) ends.push_back(inside);
    }
    ends.push_back(std::min<uint32_t>(end, static_cast<uint32_t>(response.size())));
  }
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

// The level the fixture's tasks have in their TaskRecords.
inline std::string fixture_level(const std::string& task) {
  return task == "t1" ? "1" : "2";
}

// The file a fixture candidate's response holds.
inline std::string candidate_source(uint64_t step, const CandidateSpec& spec) {
  return "import torch\n# " + spec.task + " sample " + std::to_string(spec.sample) + " step " +
         std::to_string(step) + "\nclass ModelNew(torch.nn.Module):\n    pass\n";
}

inline rewardlog::LogRecord candidate_record(const std::string& run_id, uint64_t step,
                                             const CandidateSpec& spec) {
  capnp::MallocMessageBuilder message;
  auto record = message.initRoot<schema::CandidateRecord>();
  auto v = record.initVerdict();
  v.setRunId(run_id);
  v.setStep(step);
  v.setTaskId(spec.task);
  v.setGroup(step * 100 + (spec.task == "t1" ? 1 : 2));
  v.setSampleIndex(spec.sample);
  v.setPolicyVersion(spec.policy_version);
  const bool correct = spec.failure == schema::FailureClass::NONE;
  const bool compiled = spec.failure != schema::FailureClass::COMPILE_ERROR;
  v.setCompiled(compiled);
  v.setCorrect(correct);
  v.setReward(correct ? 1.0f : 0.0f);
  v.setSpeedup(spec.speedup);
  v.setFailure(spec.failure);
  v.initTimings().setCompileSeconds(spec.compile_seconds);
  v.getTimings().setEvalSeconds(spec.eval_seconds);
  auto findings = v.initFindings(static_cast<unsigned>(spec.findings.size()));
  for (size_t i = 0; i < spec.findings.size(); ++i) {
    findings[i].setCheck(spec.findings[i]);
    findings[i].setDetail("line " + std::to_string(i + 3) + ": flagged");
  }
  auto build = v.initBuilds(1)[0];
  build.setSourceHash(kernel_hash(spec.task, spec.sample, step));
  build.setCompiled(compiled);
  const std::string source = candidate_source(step, spec);
  v.setEvaluatedSource(source);
  record.setEvaluatedSource(source);
  const std::string response = trace_response(source);
  record.setResponseText(response);
  // The trace as the learner logs it: token i unmasked at step i % 4, tokens of 5 bytes and one
  // that ends inside the two bytes of the "é" near the end (trace_token_ends).
  const std::vector<uint32_t> token_ends = trace_token_ends(response);
  auto steps = record.initUnmaskStep(static_cast<unsigned>(token_ends.size()));
  auto ends = record.initTokenTextEnds(static_cast<unsigned>(token_ends.size()));
  for (unsigned i = 0; i < token_ends.size(); ++i) {
    steps.set(i, static_cast<uint16_t>(i % 4));
    ends.set(i, token_ends[i]);
  }
  record.setAdvantage(correct ? 1.0f : -1.0f);
  record.setRolloutWorker("rollout-0");
  return must(rewardlog::encode_record(record.asReader()));
}

inline rewardlog::LogRecord kernel_record(const std::string& run_id, uint64_t step,
                                          const CandidateSpec& spec) {
  capnp::MallocMessageBuilder message;
  auto k = message.initRoot<schema::KernelRecord>();
  k.setSourceHash(kernel_hash(spec.task, spec.sample, step));
  const bool compiled = spec.failure != schema::FailureClass::COMPILE_ERROR;
  k.setCompiled(compiled);
  k.setCompileLog(compiled ? "" : "kernel.cu(7): error: identifier \"blockIdx_\" is undefined");
  k.setFirstSeenRunId(run_id);
  return must(rewardlog::encode_record(k.asReader()));
}

// The records of one step, as the learner writes them: candidates and their kernels, then the
// StepRecord and the metric series from the learner's own builders (learner/step/step_records.h).
// The phase is named `phase_name`, or "eval" / "rl" when it is empty.
inline std::vector<rewardlog::LogRecord> step_records(const std::string& run_id, uint64_t step,
                                                      uint64_t policy_version, bool evaluation,
                                                      const std::vector<CandidateSpec>& specs,
                                                      const std::string& phase_name = "") {
  std::vector<rewardlog::LogRecord> records;
  StepSettings settings;
  settings.run_id = run_id;
  settings.step = step;
  settings.policy_version = policy_version;
  settings.phase_name = !phase_name.empty() ? phase_name : evaluation ? "eval" : "rl";
  settings.evaluation = evaluation;
  // The run meets its tasks at step 0: their records, from the learner's own builder.
  for (const std::string task : {"t1", "t2"}) {
    if (step != 0) break;
    LearnerTask learner_task;
    learner_task.id = task;
    learner_task.level = fixture_level(task);
    learner_task.reference_source = "class Model(torch.nn.Module):  # reference of " + task + "\n";
    records.push_back(must(dice::task_record(learner_task, settings, 1764460000000)));
  }
  StepCounts counts;
  counts.tasks = 2;
  counts.exploration.group_size = 2;
  // Each task's group, counted as the learner's tracker counts it (group_variety); the responses
  // differ by sample, so every group has as many texts as samples.
  std::map<std::string, std::vector<std::string>> texts;
  std::map<std::string, std::vector<double>> rewards;
  for (const CandidateSpec& spec : specs) {
    texts[spec.task].push_back(trace_response(candidate_source(step, spec)));
    rewards[spec.task].push_back(spec.failure == schema::FailureClass::NONE ? 1.0 : 0.0);
  }
  for (const auto& [task, group_texts] : texts) {
    std::vector<JudgedAnswer> answers;
    for (std::size_t i = 0; i < group_texts.size(); ++i) {
      answers.push_back(JudgedAnswer{group_texts[i], rewards[task][i]});
    }
    const GroupVariety variety = group_variety(answers);
    counts.exploration.add_group(variety.samples, variety.distinct_texts, variety.mixed,
                                 !variety.mixed);
  }
  for (const CandidateSpec& spec : specs) {
    records.push_back(candidate_record(run_id, step, spec));
    records.push_back(kernel_record(run_id, step, spec));
    ++counts.candidates;
    ++counts.verdicts;
    counts.compiled += spec.failure != schema::FailureClass::COMPILE_ERROR;
    counts.correct += spec.failure == schema::FailureClass::NONE;
    counts.reward_sum += spec.failure == schema::FailureClass::NONE ? 1.0 : 0.0;
    // Scored as failures (learner.internal_errors' default), as the tracker counts them.
    counts.internal_errors += spec.failure == schema::FailureClass::INTERNAL_ERROR;
  }
  const StepTiming timing{1764460000000 + static_cast<int64_t>(step) * 10000,
                          1764460000000 + static_cast<int64_t>(step) * 10000 + 4000};
  PolicyUpdate update;
  if (!evaluation) {
    update.ran = true;
    update.policy_version = policy_version + 1;
    update.loss = 0.5 / (step + 1);
    update.kl = 0.01 * step;
    update.grad_norm = 2.0 + step;
    update.clip_fraction = 0.25 * (step + 1);
    update.seconds = 1.5;
  }
  records.push_back(must(dice::step_record(counts, settings, TaskKind::kEndToEnd, timing, update)));
  auto metrics = dice::metric_records(counts, settings, timing, update);
  EXPECT_TRUE(metrics.ok()) << metrics.status().to_string();
  if (metrics.ok()) {
    for (auto& m : metrics.value()) records.push_back(std::move(m));
  }
  return records;
}

// The evaluation table of phase `phase` for all its tasks, as the learner writes it at the
// phase's last step `step` (learner/run/run_loop.cc: report_evaluation, with the learner's
// metric_record). The values are the test's: dice-dash shows them, it does not recompute them.
struct EvalTable {
  double exec = 0, fast_1 = 0, fast_2 = 0, tasks = 0;
};
inline std::vector<rewardlog::LogRecord> eval_table_records(const std::string& run_id,
                                                            const std::string& phase, uint64_t step,
                                                            const EvalTable& t) {
  std::vector<rewardlog::LogRecord> records;
  for (const auto& [name, value] : {std::pair<const char*, double>{"exec", t.exec},
                                    {"fast_1", t.fast_1},
                                    {"fast_2", t.fast_2},
                                    {"tasks", t.tasks}}) {
    records.push_back(must(dice::metric_record(run_id, "eval/" + phase + "/" + name, step, value,
                                               1764460000000 + static_cast<int64_t>(step))));
  }
  return records;
}

// The table write_steps logs for its eval step (step 2, phase "eval").
inline EvalTable fixture_eval_table() {
  return EvalTable{0.5, 0.25, 0, 2};
}

inline rewardlog::LogRecord run_record(const std::string& run_id) {
  capnp::MallocMessageBuilder message;
  auto r = message.initRoot<schema::RunRecord>();
  r.setRunId(run_id);
  r.setStartedUnixMillis(1764460000000);
  r.setHost("node-1");
  r.setGitRevision("abc123");
  r.setConfigYaml("run:\n  id: " + run_id + "\n");
  return must(rewardlog::encode_record(r.asReader()));
}

// Three steps (two RL, one eval) whose every rate and speedup the tests below know.
inline std::vector<std::vector<CandidateSpec>> fixture_steps() {
  const std::string op = "torch-op-in-forward";
  return {
      {{"t1", 0, schema::FailureClass::NONE, 1.5f, {}, 0, 1, 2},
       {"t1", 1, schema::FailureClass::COMPILE_ERROR, 0, {}, 0, 1, 2},
       {"t2", 0, schema::FailureClass::INCORRECT, 0, {op}, 0, 1, 2},
       {"t2", 1, schema::FailureClass::NONE, 0.5f, {op, op}, 0, 1, 2}},
      {{"t1", 0, schema::FailureClass::NONE, 2.0f, {}, 0, 1, 2},
       {"t1", 1, schema::FailureClass::NONE, 3.0f, {}, 1, 1, 2},
       {"t2", 0, schema::FailureClass::NONE, 4.0f, {}, 1, 1, 2},
       {"t2", 1, schema::FailureClass::COMPILE_ERROR, 0, {}, 1, 1, 2}},
      {{"t1", 0, schema::FailureClass::INCORRECT, 0, {}, 2, 1, 2},
       {"t1", 1, schema::FailureClass::TIMEOUT, 0, {}, 2, 1, 2},
       {"t2", 0, schema::FailureClass::NONE, 1.0f, {}, 2, 1, 2},
       {"t2", 1, schema::FailureClass::NONE, 0, {}, 2, 1, 2}},  // correct, not timed: no speedup
  };
}

// Writes run-a's steps [first, last) through `writer`.
inline void write_steps(rewardlog::RewardLogWriter& writer, uint64_t first, uint64_t last) {
  const auto specs = fixture_steps();
  for (uint64_t step = first; step < last; ++step) {
    const auto& spec = specs[step % specs.size()];
    auto records = step_records("run-a", step, step, step == 2, spec);
    if (step == 2) {
      for (auto& r : eval_table_records("run-a", "eval", step, fixture_eval_table())) {
        records.push_back(std::move(r));
      }
    }
    ASSERT_TRUE(writer.append(std::move(records)).ok());
  }
}

inline std::unique_ptr<rewardlog::RewardLogWriter> open_writer(const std::string& path) {
  rewardlog::RewardLogOptions options;
  options.path = path;
  auto writer = rewardlog::RewardLogWriter::open(options);
  EXPECT_TRUE(writer.ok()) << writer.status().to_string();
  return writer.ok() ? std::move(writer).value() : nullptr;
}

// A new log at `path`: run-a's run record, then `parts` (each some records, a step's for
// example) in one batch; closed.
inline void write_log(const std::string& path,
                      const std::vector<std::vector<rewardlog::LogRecord>>& parts) {
  auto writer = open_writer(path);
  ASSERT_NE(writer, nullptr);
  std::vector<rewardlog::LogRecord> records = {run_record("run-a")};
  for (const auto& part : parts) records.insert(records.end(), part.begin(), part.end());
  ASSERT_TRUE(writer->append(std::move(records)).ok());
  ASSERT_TRUE(writer->close().ok());
}

}  // namespace dice::dash::testing
