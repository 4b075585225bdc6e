// The reward log across processes: a writer killed with SIGKILL keeps every acknowledged batch,
// and a reader in another process follows a writer that is still running.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "rewardlog/reader.h"
#include "rewardlog/writer.h"
#include "tests/rewardlog/rewardlog_test_util.h"

namespace dice::rewardlog {
namespace {

using testing::candidate_record;
using testing::step_record;
using testing::TempDir;

constexpr int kCandidatesPerBatch = 3;

// Batch b: step b of run "crash" and its candidates, written atomically.
std::vector<LogRecord> batch(uint64_t b) {
  std::vector<LogRecord> records;
  records.push_back(step_record("crash", b));
  for (uint32_t s = 0; s < kCandidatesPerBatch; ++s) {
    records.push_back(candidate_record("crash", b, "task", s));
  }
  return records;
}

bool write_u64(int fd, uint64_t value) {
  return write(fd, &value, sizeof(value)) == static_cast<ssize_t>(sizeof(value));
}

// Reads one u64; false at end of file.
bool read_u64(int fd, uint64_t* value) {
  size_t got = 0;
  while (got < sizeof(*value)) {
    const ssize_t n = read(fd, reinterpret_cast<char*>(value) + got, sizeof(*value) - got);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    got += static_cast<size_t>(n);
  }
  return true;
}

// Child: appends batches forever and reports each acknowledged batch number on `fd`. Even
// batches go through append(); odd ones through enqueue(), acknowledged by the flush() that
// follows every second enqueue.
[[noreturn]] void writer_child(const std::string& path, SyncPolicy sync, int fd) {
  RewardLogOptions options;
  options.path = path;
  options.sync = sync;
  options.sync_interval = std::chrono::milliseconds(20);
  auto writer = RewardLogWriter::open(options);
  if (!writer.ok()) _exit(3);
  std::vector<uint64_t> enqueued;
  for (uint64_t b = 0;; ++b) {
    if (b % 2 == 0) {
      if (!(*writer)->append(batch(b)).ok()) _exit(4);
      if (!write_u64(fd, b)) _exit(5);
    } else {
      if (!(*writer)->enqueue(batch(b)).ok()) _exit(4);
      enqueued.push_back(b);
      if (enqueued.size() == 2) {
        if (!(*writer)->flush().ok()) _exit(4);
        for (uint64_t e : enqueued) {
          if (!write_u64(fd, e)) _exit(5);
        }
        enqueued.clear();
      }
    }
  }
}

class RewardLogCrashTest : public ::testing::TestWithParam<SyncPolicy> {};

TEST_P(RewardLogCrashTest, SigkillLosesNothingAcknowledged) {
  const unsigned seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  for (int round = 0; round < 3; ++round) {
    TempDir dir;
    const std::string path = dir.sub("log");
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      writer_child(path, GetParam(), fds[1]);
    }
    close(fds[1]);

    const uint64_t kill_after = 1 + rng() % 400;
    std::set<uint64_t> acknowledged;
    uint64_t b = 0;
    while (acknowledged.size() < kill_after && read_u64(fds[0], &b)) acknowledged.insert(b);
    ASSERT_EQ(acknowledged.size(), kill_after) << "the writer child died early";
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    // Acknowledgements the child sent before it died count too.
    while (read_u64(fds[0], &b)) acknowledged.insert(b);
    close(fds[0]);
    int wstatus = 0;
    ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);

    // Read the crashed log as a secondary (WAL replay without the writer) ...
    RewardLogReaderOptions reader_options;
    reader_options.path = path;
    auto reader = RewardLogReader::open(reader_options);
    ASSERT_TRUE(reader.ok()) << reader.status().to_string();
    auto steps = (*reader)->steps("crash");
    ASSERT_TRUE(steps.ok()) << steps.status().to_string();
    std::set<uint64_t> present;
    for (const auto& step : *steps) present.insert(step.get().getStep());
    for (uint64_t a : acknowledged)
      ASSERT_TRUE(present.count(a)) << "lost acknowledged batch " << a;
    // ... and every batch that is there is whole.
    auto candidates = (*reader)->candidates("crash");
    ASSERT_TRUE(candidates.ok()) << candidates.status().to_string();
    EXPECT_EQ(candidates->size(), present.size() * kCandidatesPerBatch);
    reader->reset();

    // A new writer recovers the same log and can go on.
    RewardLogOptions options;
    options.path = path;
    auto writer = RewardLogWriter::open(options);
    ASSERT_TRUE(writer.ok()) << writer.status().to_string();
    ASSERT_TRUE((*writer)->append(batch(1000000)).ok());
    ASSERT_TRUE((*writer)->close().ok());
    reader = RewardLogReader::open(reader_options);
    ASSERT_TRUE(reader.ok());
    EXPECT_EQ((*reader)->steps("crash")->size(), present.size() + 1);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, RewardLogCrashTest,
                         ::testing::Values(SyncPolicy::kAlways, SyncPolicy::kNever,
                                           SyncPolicy::kInterval),
                         [](const ::testing::TestParamInfo<SyncPolicy>& info) {
                           return std::string(sync_policy_name(info.param));
                         });

// A writer child appends steps and reports each acknowledgement; it keeps the log open until
// the parent closes `stop`. The parent, a secondary reader in another process, must see every
// acknowledged step after catch_up() while the writer is still running.
TEST(RewardLogCrossProcessTest, ReaderInAnotherProcessFollowsARunningWriter) {
  constexpr uint64_t kSteps = 300;
  TempDir dir;
  const std::string path = dir.sub("log");
  int acks[2];
  int stop[2];
  ASSERT_EQ(pipe(acks), 0);
  ASSERT_EQ(pipe(stop), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(acks[0]);
    close(stop[1]);
    RewardLogOptions options;
    options.path = path;
    options.sync = SyncPolicy::kNever;
    auto writer = RewardLogWriter::open(options);
    if (!writer.ok()) _exit(3);
    for (uint64_t s = 0; s < kSteps; ++s) {
      if (!(*writer)->append({step_record("live", s)}).ok()) _exit(4);
      if (!write_u64(acks[1], s)) _exit(5);
    }
    char c;
    while (read(stop[0], &c, 1) > 0) {
    }
    _exit((*writer)->close().ok() ? 0 : 6);
  }
  close(acks[1]);
  close(stop[0]);

  uint64_t acked = 0;
  ASSERT_TRUE(read_u64(acks[0], &acked));  // the log exists once the first step is in
  RewardLogReaderOptions reader_options;
  reader_options.path = path;
  auto reader = RewardLogReader::open(reader_options);
  ASSERT_TRUE(reader.ok()) << reader.status().to_string();
  int checks = 0;
  while (read_u64(acks[0], &acked)) {
    if (acked % 25 != 0 && acked != kSteps - 1) continue;
    ASSERT_TRUE((*reader)->catch_up().ok());
    auto steps = (*reader)->steps("live");
    ASSERT_TRUE(steps.ok()) << steps.status().to_string();
    ASSERT_GE(steps->size(), acked + 1) << "acknowledged step " << acked << " not visible";
    ++checks;
    if (acked == kSteps - 1) break;
  }
  EXPECT_GE(checks, 10);
  // The writer still holds the log (it waits on `stop`): the reader saw it all while it ran.
  EXPECT_EQ(waitpid(pid, nullptr, WNOHANG), 0);
  close(stop[1]);
  int wstatus = 0;
  ASSERT_EQ(waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  close(acks[0]);
  ASSERT_TRUE((*reader)->catch_up().ok());
  EXPECT_EQ((*reader)->steps("live")->size(), kSteps);
}

}  // namespace
}  // namespace dice::rewardlog
