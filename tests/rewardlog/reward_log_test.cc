// Writer and reader against a real RocksDB on disk, in one process.
#include <gtest/gtest.h>

#include <rocksdb/db.h>
#include <filesystem>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/remove_tree.h"
#include "rewardlog/reader.h"
#include "rewardlog/writer.h"
#include "tests/rewardlog/rewardlog_test_util.h"

namespace dice::rewardlog {
namespace {

using testing::candidate_record;
using testing::kernel_record;
using testing::metric_record;
using testing::run_record;
using testing::step_record;
using testing::task_record;
using testing::TempDir;

std::unique_ptr<RewardLogWriter> open_writer(const std::string& path,
                                             SyncPolicy sync = SyncPolicy::kAlways) {
  RewardLogOptions options;
  options.path = path;
  options.sync = sync;
  auto writer = RewardLogWriter::open(options);
  EXPECT_TRUE(writer.ok()) << writer.status().to_string();
  return writer.ok() ? std::move(writer).value() : nullptr;
}

std::unique_ptr<RewardLogReader> open_reader(const std::string& path) {
  RewardLogReaderOptions options;
  options.path = path;
  auto reader = RewardLogReader::open(options);
  EXPECT_TRUE(reader.ok()) << reader.status().to_string();
  return reader.ok() ? std::move(reader).value() : nullptr;
}

// A small run: 2 runs, steps, candidates, a kernel and metrics.
std::vector<LogRecord> sample_run(const std::string& kernel_source) {
  std::vector<LogRecord> records;
  records.push_back(run_record("run-b", "second"));
  records.push_back(run_record("run-a", "first"));
  for (uint64_t step : {2, 0, 1}) records.push_back(step_record("run-a", step));
  records.push_back(step_record("run-a0", 0));  // a run id that extends "run-a"
  const std::string hash = kernel_record(kernel_source).key;
  for (uint64_t step : {0, 1}) {
    for (const char* task : {"t2", "t10"}) {
      for (uint32_t sample : {1u, 0u}) {
        records.push_back(candidate_record("run-a", step, task, sample, hash));
      }
    }
  }
  records.push_back(kernel_record(kernel_source));
  records.push_back(metric_record("run-a", "loss", 1, 0.5));
  records.push_back(metric_record("run-a", "loss", 0, 0.75));
  records.push_back(metric_record("run-a", "reward/correct_rate", 0, 0.25));
  return records;
}

TEST(RewardLogTest, WritesReadsAndReopens) {
  TempDir dir;
  const std::string path = dir.sub("log");
  {
    auto writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append(sample_run("__global__ void k(){}")).ok());
    ASSERT_TRUE(writer->close().ok());
  }
  auto reader = open_reader(path);
  ASSERT_NE(reader, nullptr);

  auto runs = reader->runs();
  ASSERT_TRUE(runs.ok()) << runs.status().to_string();
  ASSERT_EQ(runs->size(), 2u);
  EXPECT_STREQ((*runs)[0].get().getRunId().cStr(), "run-a");
  EXPECT_STREQ((*runs)[1].get().getNote().cStr(), "second");

  auto steps = reader->steps("run-a");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 3u);  // not run-a0's step
  for (uint64_t i = 0; i < 3; ++i) EXPECT_EQ((*steps)[i].get().getStep(), i);

  auto all = reader->candidates("run-a");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 8u);
  auto step1 = reader->candidates("run-a", {1, std::nullopt});
  ASSERT_TRUE(step1.ok());
  ASSERT_EQ(step1->size(), 4u);
  // Ordered by task id bytes, then sample number.
  EXPECT_STREQ((*step1)[0].get().getVerdict().getTaskId().cStr(), "t10");
  EXPECT_EQ((*step1)[0].get().getVerdict().getSampleIndex(), 0u);
  EXPECT_EQ((*step1)[1].get().getVerdict().getSampleIndex(), 1u);
  auto task = reader->candidates("run-a", {std::nullopt, "t2"});
  ASSERT_TRUE(task.ok());
  ASSERT_EQ(task->size(), 4u);
  for (const auto& c : *task) EXPECT_STREQ(c.get().getVerdict().getTaskId().cStr(), "t2");
  auto one = reader->candidates("run-a", {0, "t10"});
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->size(), 2u);

  const std::string hash = kernel_record("__global__ void k(){}").key;
  auto kernel = reader->kernel(hash);
  ASSERT_TRUE(kernel.ok());
  EXPECT_STREQ(kernel->get().getCompileLog().cStr(), "nvcc: __global__ void k(){}");
  EXPECT_EQ(reader->kernel(std::string(40, '0')).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(reader->run("nope").status().code(), StatusCode::kNotFound);

  auto metrics = reader->metrics("run-a");
  ASSERT_TRUE(metrics.ok());
  ASSERT_EQ(metrics->size(), 3u);
  EXPECT_STREQ((*metrics)[0].get().getName().cStr(), "loss");
  EXPECT_EQ((*metrics)[0].get().getStep(), 0u);
  auto rate = reader->metrics("run-a", std::string("reward/correct_rate"));
  ASSERT_TRUE(rate.ok());
  ASSERT_EQ(rate->size(), 1u);
  EXPECT_DOUBLE_EQ((*rate)[0].get().getValue(), 0.25);

  // Reopening the writer keeps what is there and adds to it.
  reader.reset();
  {
    auto writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer
                    ->append_record(decode_record<schema::StepRecord>(step_record("run-a", 3).key,
                                                                      step_record("run-a", 3).value)
                                        ->get())
                    .ok());
  }
  reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->steps("run-a")->size(), 4u);
  EXPECT_EQ(reader->candidates("run-a")->size(), 8u);
}

TEST(RewardLogTest, EnqueueIsAcknowledgedByFlushUnderEverySyncPolicy) {
  for (SyncPolicy sync : {SyncPolicy::kAlways, SyncPolicy::kNever, SyncPolicy::kInterval}) {
    SCOPED_TRACE(sync_policy_name(sync));
    TempDir dir;
    RewardLogOptions options;
    options.path = dir.sub("log");
    options.sync = sync;
    options.sync_interval = std::chrono::milliseconds(5);
    options.flush_interval = std::chrono::hours(1);  // only size or flush() writes
    options.max_batch_records = 7;
    auto writer = RewardLogWriter::open(options);
    ASSERT_TRUE(writer.ok()) << writer.status().to_string();
    for (uint64_t step = 0; step < 100; ++step) {
      std::vector<LogRecord> batch;
      batch.push_back(step_record("r", step));
      batch.push_back(metric_record("r", "loss", step, 1.0 / (step + 1)));
      ASSERT_TRUE((*writer)->enqueue(std::move(batch)).ok());
    }
    ASSERT_TRUE((*writer)->flush().ok());
    auto reader = open_reader(options.path);
    ASSERT_NE(reader, nullptr);
    EXPECT_EQ(reader->steps("r")->size(), 100u);
    EXPECT_EQ(reader->metrics("r")->size(), 100u);
    ASSERT_TRUE((*writer)->close().ok());
    EXPECT_TRUE((*writer)->close().ok());  // idempotent
    EXPECT_EQ((*writer)->append({step_record("r", 100)}).code(), StatusCode::kAborted);
    EXPECT_EQ((*writer)->enqueue({step_record("r", 100)}).code(), StatusCode::kAborted);
  }
}

TEST(RewardLogTest, EnqueuedRecordsAreWrittenAfterFlushIntervalWithoutFlush) {
  TempDir dir;
  RewardLogOptions options;
  options.path = dir.sub("log");
  options.flush_interval = std::chrono::milliseconds(10);
  auto writer = RewardLogWriter::open(options);
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->enqueue({step_record("r", 0)}).ok());
  auto reader = open_reader(options.path);
  ASSERT_NE(reader, nullptr);
  // Poll with a deadline: the writer thread writes on its own within flush_interval.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  size_t seen = 0;
  while (seen == 0 && std::chrono::steady_clock::now() < deadline) {
    ASSERT_TRUE(reader->catch_up().ok());
    seen = reader->steps("r")->size();
    if (seen == 0) std::this_thread::yield();
  }
  EXPECT_EQ(seen, 1u);
}

TEST(RewardLogTest, ConcurrentAppendersAllLand) {
  TempDir dir;
  RewardLogOptions options;
  options.path = dir.sub("log");
  options.sync = SyncPolicy::kNever;
  options.max_batch_records = 16;
  auto writer = RewardLogWriter::open(options);
  ASSERT_TRUE(writer.ok());
  constexpr int kThreads = 4;
  constexpr uint32_t kPerThread = 200;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint32_t i = 0; i < kPerThread; ++i) {
        if (!(*writer)->append({candidate_record("r", 0, "t" + std::to_string(t), i)}).ok()) {
          ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
  auto reader = open_reader(options.path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->candidates("r")->size(), kThreads * kPerThread);
}

TEST(RewardLogTest, SecondaryReaderSeesNewWritesAfterCatchUp) {
  TempDir dir;
  auto writer = open_writer(dir.sub("log"), SyncPolicy::kNever);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->append({run_record("live")}).ok());
  auto reader = open_reader(dir.sub("log"));
  ASSERT_NE(reader, nullptr);
  for (uint64_t step = 0; step < 50; ++step) {
    ASSERT_TRUE(writer->append({step_record("live", step)}).ok());
    ASSERT_TRUE(reader->catch_up().ok());
    auto steps = reader->steps("live");
    ASSERT_TRUE(steps.ok());
    ASSERT_EQ(steps->size(), step + 1);
  }
}

// A secondary keeps reading the files it opened: without a check, a log deleted and written anew
// at the same path would look unchanged to it for ever.
TEST(RewardLogTest, ACatchUpAfterTheLogWasReplacedSaysSo) {
  TempDir dir;
  {
    auto writer = open_writer(dir.sub("log"));
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append({run_record("first")}).ok());
  }
  auto reader = open_reader(dir.sub("log"));
  ASSERT_NE(reader, nullptr);
  ASSERT_TRUE(reader->catch_up().ok());
  ASSERT_TRUE(remove_tree(dir.sub("log")).ok());
  {
    auto writer = open_writer(dir.sub("log"));
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append({run_record("second")}).ok());
  }
  const Status caught = reader->catch_up();
  EXPECT_EQ(caught.code(), StatusCode::kNotFound) << caught.to_string();
  EXPECT_NE(caught.message().find("replaced since it was opened"), std::string::npos);
  auto fresh = open_reader(dir.sub("log"));
  ASSERT_NE(fresh, nullptr);
  ASSERT_TRUE(fresh->run("second").ok());
}

TEST(RewardLogTest, SecondWriterIsRefusedWhileTheFirstHoldsTheLog) {
  TempDir dir;
  auto first = open_writer(dir.sub("log"));
  ASSERT_NE(first, nullptr);
  RewardLogOptions options;
  options.path = dir.sub("log");
  auto second = RewardLogWriter::open(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable) << second.status().to_string();
  EXPECT_NE(second.status().message().find(dir.sub("log")), std::string::npos);
}

TEST(RewardLogTest, BadOptionsAndPathsGiveClearErrors) {
  TempDir dir;
  RewardLogOptions options;
  EXPECT_EQ(RewardLogWriter::open(options).status().code(), StatusCode::kInvalidArgument);
  options.path = dir.sub("log");
  options.max_batch_records = 0;
  EXPECT_NE(RewardLogWriter::open(options).status().message().find("max_batch_records"),
            std::string::npos);

  RewardLogReaderOptions reader_options;
  reader_options.path = dir.sub("missing");
  EXPECT_EQ(RewardLogReader::open(reader_options).status().code(), StatusCode::kNotFound);

  // A RocksDB database that is not a reward log.
  rocksdb::Options raw_options;
  raw_options.create_if_missing = true;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(raw_options, dir.sub("other"), &raw).ok());
  delete raw;
  reader_options.path = dir.sub("other");
  const Status other = RewardLogReader::open(reader_options).status();
  EXPECT_EQ(other.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(other.message().find("not a dice reward log"), std::string::npos);

  SyncPolicy policy;
  EXPECT_TRUE(parse_sync_policy("interval", &policy).ok());
  EXPECT_EQ(policy, SyncPolicy::kInterval);
  EXPECT_NE(parse_sync_policy("sometimes", &policy).message().find("sometimes"), std::string::npos);
}

// Drops the "tasks" column family of the closed log at `path`: a log as dice wrote it before
// that family existed.
void drop_tasks_family(const std::string& path) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  for (const std::string& name : names) {
    descriptors.emplace_back(name, rocksdb::ColumnFamilyOptions());
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, descriptors, &handles, &db).ok());
  for (auto* handle : handles) {
    if (handle->GetName() == "tasks") {
      ASSERT_TRUE(db->DropColumnFamily(handle).ok());
    }
  }
  for (auto* handle : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(handle).ok());
  delete db;
  names.clear();
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  ASSERT_EQ(std::count(names.begin(), names.end(), "tasks"), 0);
}

TEST(RewardLogTest, TasksAreReadByRunAndTaskId) {
  TempDir dir;
  const std::string path = dir.sub("log");
  auto writer = open_writer(path);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer
                  ->append({task_record("run-a", "t2", "1", "ref 2"),
                            task_record("run-a", "t10", "", "ref 10"),
                            task_record("run-a0", "t2", "3", "other run")})
                  .ok());
  auto reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto tasks = reader->tasks("run-a");
  ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
  ASSERT_EQ(tasks->size(), 2u);  // not run-a0's
  EXPECT_STREQ((*tasks)[0].get().getTaskId().cStr(), "t10");
  EXPECT_STREQ((*tasks)[1].get().getReferenceSource().cStr(), "ref 2");
  auto one = reader->task("run-a0", "t2");
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  EXPECT_STREQ(one->get().getLevel().cStr(), "3");
  EXPECT_EQ(reader->task("run-a", "t3").status().code(), StatusCode::kNotFound);
}

TEST(RewardLogTest, ALogFromBeforeTheTasksFamilyOpensAndGetsItFromTheNextWriter) {
  TempDir dir;
  const std::string path = dir.sub("log");
  {
    auto writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append({run_record("run-a"), step_record("run-a", 0)}).ok());
    ASSERT_TRUE(writer->close().ok());
  }
  drop_tasks_family(path);
  {
    auto reader = open_reader(path);
    ASSERT_NE(reader, nullptr);
    auto steps = reader->steps("run-a");
    ASSERT_TRUE(steps.ok()) << steps.status().to_string();
    EXPECT_EQ(steps->size(), 1u);
    auto tasks = reader->tasks("run-a");
    ASSERT_TRUE(tasks.ok()) << tasks.status().to_string();
    EXPECT_TRUE(tasks->empty());
    const Status missing = reader->task("run-a", "t1").status();
    EXPECT_EQ(missing.code(), StatusCode::kNotFound);
    EXPECT_NE(missing.message().find("predates the tasks family"), std::string::npos)
        << missing.to_string();
  }
  // A writer of this build adds the family and can write tasks into the old log.
  auto writer = open_writer(path);
  ASSERT_NE(writer, nullptr);
  ASSERT_TRUE(writer->append({task_record("run-a", "t1", "2", "ref")}).ok());
  auto reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto task = reader->task("run-a", "t1");
  ASSERT_TRUE(task.ok()) << task.status().to_string();
  EXPECT_STREQ(task->get().getLevel().cStr(), "2");
  EXPECT_EQ(reader->steps("run-a")->size(), 1u);
}

TEST(RewardLogTest, GarbageValuesGiveCorruptionNamingTheKey) {
  TempDir dir;
  const std::string path = dir.sub("log");
  {
    auto writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append(sample_run("src")).ok());
  }
  testing::put_raw_value(path, Family::kSteps, step_key("run-a", 7), "\x13\x37garbage bytes here");
  testing::put_raw_value(path, Family::kKernels, std::string(40, 'e'), std::string(24, '\xff'));
  testing::put_raw_value(path, Family::kCandidates, run_prefix("run-a") + "x",
                         step_record("run-a", 0).value);

  auto reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  const Status steps = reader->steps("run-a").status();
  EXPECT_EQ(steps.code(), StatusCode::kCorruption);
  EXPECT_NE(steps.message().find("steps/run-a/step=7"), std::string::npos) << steps.message();
  EXPECT_NE(steps.message().find(path), std::string::npos);

  const Status kernel = reader->kernel(std::string(40, 'e')).status();
  EXPECT_EQ(kernel.code(), StatusCode::kCorruption);
  EXPECT_NE(kernel.message().find("kernels/" + std::string(40, 'e')), std::string::npos);

  const Status candidates = reader->candidates("run-a").status();
  EXPECT_EQ(candidates.code(), StatusCode::kCorruption);
  EXPECT_NE(candidates.message().find("unparseable key"), std::string::npos)
      << candidates.message();

  // The rest of the log is still readable.
  EXPECT_TRUE(reader->runs().ok());
  EXPECT_TRUE(reader->metrics("run-a").ok());
  EXPECT_EQ(reader->candidates("run-a", {1, std::nullopt})->size(), 4u);
}

// A resumed run erases what it logged from its resume step on: steps, candidates and metrics of
// those steps, never another run's records (not even one whose id extends this one's), the
// RunRecord, kernels, or metric series the caller keeps.
TEST(RewardLogTest, EraseRunFromRemovesTheStepsThatRunAgain) {
  TempDir dir;
  const std::string path = dir.sub("log");
  {
    auto writer = open_writer(path);
    ASSERT_NE(writer, nullptr);
    ASSERT_TRUE(writer->append(sample_run("__global__ void k(){}")).ok());
    std::vector<LogRecord> more;
    more.push_back(metric_record("run-a", "sft/loss", 7, 0.1));  // an SFT series: its own steps
    more.push_back(candidate_record("run-a0", 1, "t2", 0));
    more.push_back(metric_record("run-a0", "loss", 1, 0.5));
    ASSERT_TRUE(writer->append(std::move(more)).ok());
    auto erased = writer->erase_run_from("run-a", 1, {"sft/"});
    ASSERT_TRUE(erased.ok()) << erased.status().to_string();
    // Steps 1 and 2, the 4 candidates of step 1, metric loss@1.
    EXPECT_EQ(*erased, 2u + 4u + 1u);
    auto again = writer->erase_run_from("run-a", 1, {"sft/"});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, 0u);
    EXPECT_FALSE(writer->erase_run_from(std::string("bad\0id", 6), 0).ok());
    ASSERT_TRUE(writer->close().ok());
  }
  auto reader = open_reader(path);
  ASSERT_NE(reader, nullptr);
  auto steps = reader->steps("run-a");
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].get().getStep(), 0u);
  auto candidates = reader->candidates("run-a");
  ASSERT_TRUE(candidates.ok());
  EXPECT_EQ(candidates->size(), 4u);
  for (const auto& c : *candidates) EXPECT_EQ(c.get().getVerdict().getStep(), 0u);
  auto metrics = reader->metrics("run-a");
  ASSERT_TRUE(metrics.ok());
  std::vector<std::string> left;
  for (const auto& m : *metrics) {
    left.push_back(std::string(m.get().getName().cStr()) + "@" + std::to_string(m.get().getStep()));
  }
  EXPECT_EQ(left, (std::vector<std::string>{"loss@0", "reward/correct_rate@0", "sft/loss@7"}));
  EXPECT_TRUE(reader->run("run-a").ok());
  EXPECT_EQ(reader->steps("run-a0")->size(), 1u);
  EXPECT_EQ(reader->candidates("run-a0")->size(), 1u);
  EXPECT_EQ(reader->metrics("run-a0")->size(), 1u);
}

}  // namespace
}  // namespace dice::rewardlog
