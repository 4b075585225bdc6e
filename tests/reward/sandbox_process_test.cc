// Integration tests of SandboxProcess, the start-now, work-later form of the sandbox the reward
// service uses to have the judge and runner ready before a candidate arrives: real child processes,
// the same isolation as run_sandboxed().
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "reward/sandbox/sandbox.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

namespace fs = std::filesystem;

// Python that the sandbox uid can execute (the pyenv shim under /root is not reachable).
constexpr char kPython[] = "/usr/bin/python3";

// Prints READY once started, then reads one line of work and a file the worker added later.
constexpr char kServeOne[] =
    "import sys\n"
    "print('starting', flush=True)\n"
    "print('READY', flush=True)\n"
    "job = sys.stdin.readline().strip()\n"
    "print('job=' + job + ' file=' + open('late.txt').read(), flush=True)\n";

SandboxSpec serve_spec(const std::string& code) {
  SandboxSpec spec;
  spec.argv = {kPython, "-c", code};
  spec.memory_limit_mb = 1024;
  spec.max_output_mb = 1;
  spec.input_pipe = true;
  return spec;
}

std::unique_ptr<SandboxProcess> start_ok(const SandboxSpec& spec) {
  auto p = SandboxProcess::start(spec);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return p.ok() ? std::move(p).value() : nullptr;
}

TEST(SandboxProcessTest, WorkHandedOverAfterReadyRuns) {
  auto p = start_ok(serve_spec(kServeOne));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->wait_for_line("READY", 10).ok());
  ASSERT_TRUE(p->add_files({{"late.txt", "written-after-start"}}).ok());
  ASSERT_TRUE(p->send_input("job-7\n").ok());
  SandboxResult r = p->wait(10);
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  // Output before the awaited line is kept; the line itself is not.
  EXPECT_EQ(r.stdout_text, "starting\njob=job-7 file=written-after-start\n");
  EXPECT_EQ(r.isolated, geteuid() == 0);
}

// A conversation: the job with stdin kept open, a question back, the answer, then the end.
TEST(SandboxProcessTest, InputKeptOpenTakesAnAnswerLater) {
  auto p = start_ok(serve_spec(
      "import sys\nprint('READY', flush=True)\njob = sys.stdin.readline().strip()\n"
      "print('ASK ' + job, flush=True)\nanswer = sys.stdin.readline().strip()\n"
      "rest = sys.stdin.read()\nprint('job=%s answer=%s rest=%r' % (job, answer, rest))\n"));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->wait_for_line("READY", 10).ok());
  ASSERT_TRUE(p->send_input("job-9\n", /*keep_open=*/true).ok());
  ASSERT_TRUE(p->wait_for_line("ASK job-9", 10).ok());
  ASSERT_TRUE(p->send_input("yes\n").ok());  // and the end of input
  SandboxResult r = p->wait(10);
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "job=job-9 answer=yes rest=''\n");
}

// A process that answers one request after another (the evaluation's judge): each answer is the
// first line with its prefix, the lines before it are consumed, and what it writes to stderr
// meanwhile, far more than a pipe holds, neither blocks it nor is lost: it comes with take_stderr.
TEST(SandboxProcessTest, LinesOfARequestAfterAnotherAndTheirStderr) {
  auto p =
      start_ok(serve_spec("import sys\n"
                          "for n in range(2):\n"
                          "    job = sys.stdin.readline().strip()\n"
                          "    sys.stderr.write(('noise %d ' % n) * 40000 + 'end %d\\n' % n)\n"
                          "    sys.stderr.flush()\n"
                          "    print('chatter', flush=True)\n"
                          "    print('RESULT ' + job, flush=True)\n"
                          "print('ANOTHER', flush=True)\n"));
  ASSERT_NE(p, nullptr);
  for (const char* job : {"one", "two"}) {
    ASSERT_TRUE(p->send_input(std::string(job) + "\n", /*keep_open=*/true).ok());
    auto line = p->next_line_starting({"ASK ", "RESULT "}, 20);
    ASSERT_TRUE(line.ok()) << line.status().to_string();
    EXPECT_EQ(*line, std::string("RESULT ") + job);
    const std::string err = p->take_stderr();
    EXPECT_LE(err.size(), 32u * 1024);  // its end is kept
    EXPECT_NE(err.find(std::string("end ") + (job[1] == 'n' ? "0" : "1")), std::string::npos)
        << err.substr(err.size() > 200 ? err.size() - 200 : 0);
  }
  // Nothing it printed before is read again; a prefix it never prints ends with its end.
  auto next = p->next_line_starting({"ANOTHER"}, 20);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(*next, "ANOTHER");
  EXPECT_FALSE(p->next_line_starting({"RESULT "}, 20).ok());
  SandboxResult r = p->wait(10);
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
}

TEST(SandboxProcessTest, TheTimeoutCountsFromWaitNotFromStart) {
  // Idle for longer than the run's own limit before the work comes: not a timeout.
  SandboxSpec spec = serve_spec(kServeOne);
  spec.timeout_seconds = 0.5;
  auto p = start_ok(spec);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->wait_for_line("READY", 10).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  ASSERT_TRUE(p->add_files({{"late.txt", "x"}}).ok());
  ASSERT_TRUE(p->send_input("go\n").ok());
  SandboxResult r = p->wait(5);
  EXPECT_FALSE(r.timed_out);
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_LT(r.wall_seconds, 5);
}

TEST(SandboxProcessTest, WaitStillEnforcesItsLimit) {
  auto p =
      start_ok(serve_spec("import sys, time\nprint('READY', flush=True)\n"
                          "sys.stdin.readline()\ntime.sleep(60)\n"));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->wait_for_line("READY", 10).ok());
  ASSERT_TRUE(p->send_input("go\n").ok());
  SandboxResult r = p->wait(0.5);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_seconds, 5);
}

TEST(SandboxProcessTest, AProcessThatDiesBeforeReadyIsAnErrorNotAHang) {
  auto p = start_ok(serve_spec("import sys; print('broken start', file=sys.stderr); sys.exit(3)"));
  ASSERT_NE(p, nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  Status ready = p->wait_for_line("READY", 30);
  EXPECT_FALSE(ready.ok());
  EXPECT_EQ(ready.code(), StatusCode::kAborted) << ready.to_string();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5);
  // Its exit and stderr are still there for the log.
  SandboxResult r = p->wait(5);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.stderr_text.find("broken start"), std::string::npos);
}

TEST(SandboxProcessTest, SendingToAGoneProcessFailsWithoutSigpipe) {
  auto p = start_ok(serve_spec("import os; os.close(0); print('READY', flush=True)"));
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(p->wait_for_line("READY", 10).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // it exits meanwhile
  std::string big(1 << 20, 'x');                                // more than a socket buffer holds
  Status sent = p->send_input(big);
  EXPECT_FALSE(sent.ok());  // the test process is still alive: no SIGPIPE
  SandboxResult r = p->wait(5);
  EXPECT_EQ(r.exit_code, 0);
}

TEST(SandboxProcessTest, ReadinessTimesOutAndDestroyingKillsAndCleansUp) {
  std::string scratch;
  {
    auto p = start_ok(serve_spec("import time; time.sleep(60)"));
    ASSERT_NE(p, nullptr);
    scratch = p->scratch();
    const auto t0 = std::chrono::steady_clock::now();
    Status ready = p->wait_for_line("READY", 0.5);
    EXPECT_EQ(ready.code(), StatusCode::kTimeout) << ready.to_string();
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5);
    EXPECT_TRUE(fs::exists(scratch));
  }
  EXPECT_FALSE(fs::exists(scratch));
}

TEST(SandboxProcessTest, LateFilesBelongToTheRunAndNeedPlainNames) {
  auto p = start_ok(
      serve_spec("import os, sys\nprint('READY', flush=True)\nsys.stdin.readline()\n"
                 "open('late.txt', 'a').write('appended')\nprint(open('late.txt').read())\n"));
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->add_files({{"../escape.txt", "x"}}).ok());
  EXPECT_FALSE(p->add_files({{"", "x"}}).ok());
  ASSERT_TRUE(p->wait_for_line("READY", 10).ok());
  ASSERT_TRUE(p->add_files({{"late.txt", "mine:"}}).ok());
  ASSERT_TRUE(p->send_input("\n").ok());
  SandboxResult r = p->wait(10);
  // Under a leased uid the child can write the file the worker (root) added.
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "mine:appended\n");
}

// Every run is forked by one spawner thread of the process (sandbox_child.h). A process forked
// from one that had started runs has no such thread (fork copies only the calling thread): its
// runs must start all the same, not wait for a thread that is not there.
TEST(SandboxProcessTest, AForkedProcessStartsRunsOfItsOwn) {
  SandboxSpec spec;
  spec.argv = {"/bin/true"};
  spec.isolate = false;
  auto first = run_sandboxed(spec);
  ASSERT_TRUE(first.ok() && first->succeeded()) << first.status().to_string();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto run = run_sandboxed(spec);
    _exit(run.ok() && run->succeeded() ? 0 : 1);
  }
  int status = 0;
  bool reaped = false;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!(reaped = waitpid(child, &status, WNOHANG) == child) &&
         std::chrono::steady_clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!reaped) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the forked process's run never started";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace
}  // namespace dice
