// Integration tests of the sandbox with real child processes: each hostile program must end
// classified, in bounded time, with this (the worker) process unharmed.
#include "reward/sandbox.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

namespace dice {
namespace {

using FC = schema::FailureClass;

// Python that the sandbox uid can execute (the pyenv shim under /root is not reachable).
constexpr char kPython[] = "/usr/bin/python3";

SandboxSpec python_spec(const std::string& code) {
  SandboxSpec spec;
  spec.argv = {kPython, "-c", code};
  spec.timeout_seconds = 10;
  spec.memory_limit_mb = 1024;
  spec.max_processes = 32;
  spec.max_output_mb = 1;
  return spec;
}

SandboxResult run_ok(const SandboxSpec& spec) {
  auto result = run_sandboxed(spec);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? result.value() : SandboxResult{};
}

TEST(SandboxTest, RunsAndCapturesOutput) {
  SandboxResult r = run_ok(python_spec(
      "import os, sys; print('hello'); print('err', file=sys.stderr); print(os.getcwd())"));
  EXPECT_TRUE(r.succeeded());
  EXPECT_EQ(r.stdout_text.substr(0, 6), "hello\n");
  EXPECT_EQ(r.stderr_text, "err\n");
  EXPECT_NE(r.stdout_text.find("/dice-sandbox-"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(classify_sandbox_failure(r), FC::NONE);
}

TEST(SandboxTest, ScratchIsRemovedAndFilesArePlaced) {
  SandboxSpec spec = python_spec("import os; print(os.getcwd()); print(open('in.txt').read())");
  spec.files = {{"in.txt", "payload"}};
  SandboxResult r = run_ok(spec);
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  std::string cwd = r.stdout_text.substr(0, r.stdout_text.find('\n'));
  EXPECT_NE(r.stdout_text.find("payload"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(cwd)) << cwd;
}

TEST(SandboxTest, EnvironmentIsScrubbed) {
  setenv("DICE_SECRET_FOR_TEST", "leak", 1);
  SandboxSpec spec = python_spec("import os; print(sorted(os.environ))");
  spec.env = {"EXTRA=1"};
  SandboxResult r = run_ok(spec);
  unsetenv("DICE_SECRET_FOR_TEST");
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("DICE_SECRET_FOR_TEST"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("'EXTRA'"), std::string::npos);
  EXPECT_NE(r.stdout_text.find("'HOME'"), std::string::npos);
}

TEST(SandboxTest, NonZeroExitIsNotAFailureClass) {
  SandboxResult r = run_ok(python_spec("import sys; sys.exit(3)"));
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(classify_sandbox_failure(r), FC::NONE);
}

TEST(SandboxTest, InfiniteLoopTimesOut) {
  SandboxSpec spec = python_spec("while True: pass");
  spec.timeout_seconds = 1.5;
  SandboxResult r = run_ok(spec);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.wall_seconds, 5);
  EXPECT_EQ(classify_sandbox_failure(r), FC::TIMEOUT);
}

TEST(SandboxTest, CpuLimitStopsBusyLoop) {
  SandboxSpec spec = python_spec("while True: pass");
  spec.cpu_time_seconds = 1;
  SandboxResult r = run_ok(spec);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(classify_sandbox_failure(r), FC::RESOURCE_LIMIT) << describe_sandbox_result(r);
}

TEST(SandboxTest, HugeAllocationHitsMemoryLimit) {
  SandboxResult r = run_ok(python_spec("x = bytearray(100 * 1024**3)"));
  EXPECT_FALSE(r.succeeded());
  EXPECT_NE(r.stderr_text.find("MemoryError"), std::string::npos) << r.stderr_text;
  EXPECT_EQ(classify_sandbox_failure(r), FC::RESOURCE_LIMIT);
}

TEST(SandboxTest, ForkBombIsContained) {
  if (geteuid() != 0) GTEST_SKIP() << "RLIMIT_NPROC needs the uid switch, which needs root";
  // Each child forks forever; the process limit stops it and the timeout cleans up whatever is
  // left (all of it: the child is PID 1 of its namespace).
  SandboxSpec spec = python_spec(
      "import os, sys\n"
      "n = 0\n"
      "try:\n"
      "    while True:\n"
      "        if os.fork() == 0:\n"
      "            while True: pass\n"
      "        n += 1\n"
      "except OSError as e:\n"
      "    print('forks', n, file=sys.stderr); raise\n");
  spec.timeout_seconds = 5;
  SandboxResult r = run_ok(spec);
  EXPECT_TRUE(r.unprivileged);
  EXPECT_NE(r.stderr_text.find("Resource temporarily unavailable"), std::string::npos)
      << r.stderr_text;
  EXPECT_EQ(classify_sandbox_failure(r), FC::RESOURCE_LIMIT);
  // The worker can still start processes: nothing of the bomb survived.
  SandboxResult after = run_ok(python_spec("print('alive')"));
  EXPECT_TRUE(after.succeeded()) << after.stderr_text;
}

TEST(SandboxTest, WritingOutsideScratchIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for the uid switch and mount namespace";
  for (const std::string& target : {std::string(DICE_REPO_DIR) + "/sandbox_escape.txt",
                                    std::string("/tmp/dice_sandbox_escape.txt")}) {
    SandboxResult r = run_ok(python_spec("open('" + target + "', 'w').write('x')"));
    EXPECT_FALSE(r.succeeded()) << target;
    EXPECT_EQ(classify_sandbox_failure(r), FC::SANDBOX_VIOLATION) << target << r.stderr_text;
    EXPECT_FALSE(std::filesystem::exists(target)) << target;
  }
}

TEST(SandboxTest, WritingInsideScratchWorks) {
  SandboxResult r = run_ok(python_spec(
      "import tempfile; open('a.txt', 'w').write('x'); tempfile.NamedTemporaryFile().write(b'y')"));
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
}

TEST(SandboxTest, ProcIsTheSandboxsOwn) {
  if (geteuid() != 0) GTEST_SKIP() << "PID and mount namespaces need root here";
  // /proc/<getpid()> must be this process (the CUDA driver reads its own entry by pid), and the
  // worker's processes must not be listed.
  SandboxResult r =
      run_ok(python_spec("import os\n"
                         "me = open('/proc/%d/cmdline' % os.getpid(), 'rb').read()\n"
                         "assert b'python' in me, me\n"
                         "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
                         "assert str(" +
                         std::to_string(getpid()) + ") not in pids or " + std::to_string(getpid()) +
                         " <= 3, pids\n"
                         "print(len(pids))"));
  EXPECT_TRUE(r.isolated);
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_LE(std::stoi(r.stdout_text.empty() ? "99" : r.stdout_text), 3) << r.stdout_text;
}

TEST(SandboxTest, NoNetwork) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  for (const char* addr : {"127.0.0.1", "8.8.8.8"}) {
    SandboxResult r = run_ok(python_spec(
        std::string("import socket; s = socket.create_connection(('") + addr + "', 80), 3)"));
    EXPECT_TRUE(r.isolated);
    EXPECT_FALSE(r.succeeded()) << addr;
    EXPECT_EQ(classify_sandbox_failure(r), FC::SANDBOX_VIOLATION) << addr << r.stderr_text;
  }
}

TEST(SandboxTest, HugeOutputIsTruncated) {
  // 200 MiB to stdout against a 1 MiB cap: the worker keeps about 1 MiB plus the tail.
  SandboxResult r = run_ok(python_spec(
      "import sys\nb = b'x' * (1 << 20)\nfor _ in range(200): sys.stdout.buffer.write(b)\n"
      "sys.stdout.buffer.write(b'END')"));
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_TRUE(r.output_truncated);
  EXPECT_LT(r.stdout_text.size(), 2u << 20);
  EXPECT_EQ(r.stdout_text.substr(r.stdout_text.size() - 3), "END");
  EXPECT_NE(r.stdout_text.find("bytes dropped"), std::string::npos);
}

TEST(SandboxTest, HugeFileHitsFileSizeLimit) {
  SandboxResult r = run_ok(python_spec(
      "f = open('big', 'wb')\nfor _ in range(10): f.write(b'x' * (1 << 20)); f.flush()"));
  EXPECT_FALSE(r.succeeded());
  EXPECT_EQ(classify_sandbox_failure(r), FC::RESOURCE_LIMIT) << describe_sandbox_result(r);
}

TEST(SandboxTest, CrashIsClassified) {
  SandboxResult r = run_ok(python_spec("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"));
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(classify_sandbox_failure(r), FC::CRASHED);
}

TEST(SandboxTest, MissingProgramIsAnInternalError) {
  SandboxSpec spec;
  spec.argv = {"/nonexistent/dice-no-such-binary"};
  SandboxResult r = run_ok(spec);
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(classify_sandbox_failure(r), FC::INTERNAL_ERROR);
}

TEST(SandboxTest, EmptyCommandIsRejected) {
  EXPECT_FALSE(run_sandboxed(SandboxSpec{}).ok());
}

}  // namespace
}  // namespace dice
