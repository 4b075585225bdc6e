// Integration tests of the sandbox with real child processes: each hostile program must end
// classified, in bounded time, with this (the worker) process unharmed.
#include "reward/sandbox/sandbox.h"
#include "reward/run_failure.h"

#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "reward/pipeline.h"
#include "reward/sandbox/sandbox_netns.h"

#include "common/remove_tree.h"
#include "tests/reward/sandbox_test_util.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

using FC = schema::FailureClass;

using sandbox_test::kPython;

SandboxSpec python_spec(const std::string& code) {
  return sandbox_test::python_spec(code, 10, 1024);
}

using sandbox_test::run_ok;

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

// Each run's uid has no passwd entry; Python code that asks for the user name (torch.profiler
// does) must still get one.
// A candidate's CPU thread pools are sized by reward.sandbox.cpu_threads, not by the node's core
// count: OpenMP's one thread per core passed RLIMIT_NPROC (64) on a 32-core node and crashed
// correct candidates in pthread_create ("libgomp: Thread creation failed").
TEST(SandboxTest, CandidateThreadPoolsAreSizedByTheRewardOptions) {
  SandboxOptions options;
  options.cpu_threads = 2;
  SandboxSpec spec = sandbox_from_options(options, /*timeout_seconds=*/60);
  spec.argv = {kPython, "-c",
               "import os\n"
               "print(os.environ['OMP_NUM_THREADS'], os.environ['MKL_NUM_THREADS'],\n"
               "      os.environ['OPENBLAS_NUM_THREADS'])\n"
               "try:\n"
               "    import torch\n"
               "    print('torch', torch.get_num_threads())\n"
               "except ImportError:\n"
               "    print('torch missing')\n"};
  SandboxResult r = run_ok(spec);
  EXPECT_EQ(r.exit_code, 0) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.substr(0, r.stdout_text.find('\n') + 1), "2 2 2\n");
  if (r.stdout_text.find("torch missing") != std::string::npos) {
    GTEST_SKIP() << kPython << " has no torch: its intra-op pool was not checked";
  }
  EXPECT_NE(r.stdout_text.find("\ntorch 2\n"), std::string::npos) << r.stdout_text;
}

TEST(SandboxTest, UserNameResolvesWithoutAPasswdEntry) {
  SandboxResult r = run_ok(python_spec("import getpass; print(getpass.getuser())"));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text, "dice-sandbox\n");
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

TEST(SandboxTest, WritingOutsideScratchDoesNotReachTheHost) {
  if (geteuid() != 0) GTEST_SKIP() << "the isolated sandbox needs root";
  // The repository is not in the run's root at all; /tmp there is a private tmpfs of the run's
  // (sandbox_isolation_test.cc tries more places). Neither write reaches the host.
  const std::string in_repo = std::string(DICE_REPO_DIR) + "/sandbox_escape.txt";
  const std::string in_tmp = "/tmp/dice_sandbox_escape.txt";
  SandboxResult repo = run_ok(python_spec("open('" + in_repo + "', 'w').write('x')"));
  EXPECT_FALSE(repo.succeeded());
  EXPECT_NE(repo.stderr_text.find("No such file or directory"), std::string::npos)
      << repo.stderr_text;
  run_ok(python_spec("open('" + in_tmp + "', 'w').write('x')"));
  for (const std::string& target : {in_repo, in_tmp}) {
    EXPECT_FALSE(std::filesystem::exists(target)) << target;
  }
  // What the root has from the host is read-only.
  for (const char* target : {"/usr/sandbox_escape.txt", "/etc/sandbox_escape.txt"}) {
    SandboxResult r = run_ok(python_spec(std::string("open('") + target + "', 'w').write('x')"));
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

// The first line of a run's output: the runs below print their network namespace there, e.g.
// "net:[4026532321]".
std::string first_line(const std::string& text) {
  return text.substr(0, text.find('\n'));
}

std::string worker_netns() {
  return std::filesystem::read_symlink("/proc/self/ns/net").string();
}

// The same name for the namespace an fd holds.
std::string netns_of_fd(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return "?";
  return "net:[" + std::to_string(st.st_ino) + "]";
}

constexpr char kPrintNetns[] = "import os; print(os.readlink('/proc/self/ns/net'))\n";

TEST(SandboxTest, EvaluationRunsJoinAPooledNetworkNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  SandboxResult r = run_ok(python_spec(kPrintNetns));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_TRUE(r.isolated);
  EXPECT_TRUE(r.pooled_network);
  EXPECT_EQ(first_line(r.stdout_text).rfind("net:[", 0), 0u) << r.stdout_text;
  EXPECT_NE(first_line(r.stdout_text), worker_netns());
}

TEST(SandboxTest, ConcurrentRunsGetDifferentNetworkNamespaces) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  // The runs meet in a shared working directory: each writes a file and waits (polling, with a
  // deadline) until every other one has, so all of them are alive at the same time.
  std::string templ = "/tmp/dice-netns-meet-XXXXXX";
  ASSERT_NE(mkdtemp(templ.data()), nullptr);
  const std::string meet = templ;
  ASSERT_EQ(chmod(meet.c_str(), 0777), 0);
  const std::vector<std::string> names = {"a", "b", "c", "d"};
  std::vector<SandboxResult> results(names.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < names.size(); ++i) {
    threads.emplace_back([&, i] {
      SandboxSpec spec = python_spec(
          "import os, time\n"
          "me = os.readlink('/proc/self/ns/net')\n"
          "open('" +
          names[i] +
          ".tmp', 'w').write(me)\n"
          "os.rename('" +
          names[i] + ".tmp', '" + names[i] +
          "')\n"
          "deadline = time.monotonic() + 20\n"
          "while not all(os.path.exists(n) for n in 'abcd'):\n"
          "    assert time.monotonic() < deadline, 'the other runs never arrived'\n"
          "    time.sleep(0.01)\n"
          "print(me)\n");
      spec.timeout_seconds = 30;
      spec.workdir = meet;
      results[i] = run_ok(spec);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_TRUE(remove_tree(meet).ok());
  std::set<std::string> namespaces;
  for (const SandboxResult& r : results) {
    ASSERT_TRUE(r.succeeded()) << r.stderr_text;
    EXPECT_TRUE(r.pooled_network);
    namespaces.insert(first_line(r.stdout_text));
  }
  EXPECT_EQ(namespaces.size(), names.size());
  EXPECT_EQ(namespaces.count(worker_netns()), 0u);
}

TEST(SandboxTest, PoolServesManyRunsWithoutNetwork) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  // 40 runs, 4 at a time: every one is cut off from the network, and the pool stays at the
  // concurrency instead of making a namespace per run.
  constexpr int kRuns = 40, kConcurrency = 4;
  const NetnsPoolStats before = NetnsPool::shared().stats();
  std::vector<SandboxResult> results(kRuns);
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kConcurrency; ++t) {
    threads.emplace_back([&] {
      for (int i = next++; i < kRuns; i = next++) {
        results[static_cast<size_t>(i)] =
            run_ok(python_spec("import os, socket\n"
                               "print(os.readlink('/proc/self/ns/net'))\n"
                               "for addr in ('127.0.0.1', '8.8.8.8'):\n"
                               "    try:\n"
                               "        socket.create_connection((addr, 80), 3)\n"
                               "        print('connected', addr)\n"
                               "    except OSError as e:\n"
                               "        print('refused', addr, e)\n"));
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> namespaces;
  for (const SandboxResult& r : results) {
    ASSERT_TRUE(r.succeeded()) << r.stderr_text;
    EXPECT_TRUE(r.pooled_network);
    EXPECT_EQ(r.stdout_text.find("connected"), std::string::npos) << r.stdout_text;
    namespaces.insert(first_line(r.stdout_text));
  }
  const NetnsPoolStats after = NetnsPool::shared().stats();
  EXPECT_GE(after.leased - before.leased, kRuns);
  EXPECT_LE(after.created - before.created, kConcurrency + 2);  // 2: the spares
  EXPECT_LE(namespaces.size(), static_cast<size_t>(after.created));
  EXPECT_EQ(namespaces.count(worker_netns()), 0u);
}

TEST(SandboxTest, WhatARunLeavesDoesNotReachTheNextRun) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  // The first run leaves a daemon (its own session, out of the run's process group) listening
  // on an abstract unix socket, a TCP port and a UDP port. It dies with the run's PID
  // namespace; later runs, until one gets the same network namespace back (idle ones are handed
  // out oldest first, so within the pool's size), must find nothing.
  SandboxResult first = run_ok(python_spec(
      "import os, socket, sys\n"
      "me = os.readlink('/proc/self/ns/net')\n"
      "r, w = os.pipe()\n"
      "if os.fork() == 0:\n"
      "    os.setsid()\n"
      "    if os.fork() == 0:\n"
      "        u = socket.socket(socket.AF_UNIX); u.bind('\\0dice-leftover'); u.listen()\n"
      "        t = socket.socket(); t.bind(('0.0.0.0', 47001)); t.listen()\n"
      "        d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.bind(('0.0.0.0', 47002))\n"
      "        os.write(w, b'1')\n"
      "        while True: u.accept()\n"
      "    os._exit(0)\n"
      "assert os.read(r, 1) == b'1'\n"
      "print(me)\n"));
  ASSERT_TRUE(first.succeeded()) << first.stderr_text;
  ASSERT_TRUE(first.pooled_network);
  const std::string probe =
      "import os, socket\n"
      "print(os.readlink('/proc/self/ns/net'))\n"
      "u = socket.socket(socket.AF_UNIX)\n"
      "try:\n"
      "    u.connect('\\0dice-leftover'); print('reached the leftover')\n"
      "except ConnectionRefusedError:\n"
      "    pass\n"
      "t = socket.socket(); t.bind(('0.0.0.0', 47001)); t.close()\n"
      "d = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); d.bind(('0.0.0.0', 47002))\n"
      "d.close(); u.close()\n"
      "for table in ('tcp', 'udp', 'unix'):\n"
      "    rows = open('/proc/net/' + table).read().splitlines()[1:]\n"
      "    print(table, len(rows))\n";
  bool reused = false;
  for (int i = 0; i < 64 && !reused; ++i) {
    SandboxResult next = run_ok(python_spec(probe));
    ASSERT_TRUE(next.succeeded()) << next.stderr_text;
    reused = first_line(next.stdout_text) == first_line(first.stdout_text);
    EXPECT_EQ(next.stdout_text.find("reached"), std::string::npos) << next.stdout_text;
    EXPECT_NE(next.stdout_text.find("tcp 0\nudp 0\nunix 0\n"), std::string::npos)
        << next.stdout_text;
  }
  EXPECT_TRUE(reused) << "the pool never handed the namespace out again";
}

// Runs `fn` in a thread that has joined the namespace of `fd` (a thread of its own, so this
// test's thread keeps the worker's namespace).
template <typename Fn>
void in_netns(int fd, Fn fn) {
  std::thread([&] {
    ASSERT_EQ(setns(fd, CLONE_NEWNET), 0) << strerror(errno);
    fn();
  }).join();
}

TEST(SandboxTest, ARunNeverGetsANamespaceThatIsNotClean) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  NetnsPool& pool = NetnsPool::shared();
  // Dirt a candidate cannot make but the check must catch: lo brought up (what a root run could
  // do), and a bound socket held past the run by someone outside it. The dirty namespace goes
  // back to the pool; the run that draws it (idle ones go out oldest first, so within the
  // pool's size) must run in a fresh one instead, and the pool must discard it.
  for (const char* dirt : {"lo up", "socket"}) {
    auto lease = pool.acquire();
    ASSERT_TRUE(lease.ok()) << lease.status().to_string();
    const std::string dirty = netns_of_fd(lease->fd());
    int held = -1;
    in_netns(lease->fd(), [&] {
      held = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
      ASSERT_GE(held, 0);
      if (std::string(dirt) == "lo up") {
        ifreq request{};
        std::strncpy(request.ifr_name, "lo", IFNAMSIZ - 1);
        ASSERT_EQ(ioctl(held, SIOCGIFFLAGS, &request), 0);
        request.ifr_flags = static_cast<short>(request.ifr_flags | IFF_UP);
        ASSERT_EQ(ioctl(held, SIOCSIFFLAGS, &request), 0);
        close(held);
        held = -1;
      } else {
        // Bound: an unbound socket has no address or port another run could meet.
        sockaddr_in any{};
        any.sin_family = AF_INET;
        ASSERT_EQ(bind(held, reinterpret_cast<sockaddr*>(&any), sizeof(any)), 0);
      }
    });
    const std::int64_t discarded = pool.stats().discarded;
    { NetnsLease returned = std::move(lease).value(); }
    bool replaced = false;
    for (int i = 0; i < 64 && !replaced; ++i) {
      SandboxResult r = run_ok(
          python_spec("import os, socket\n"
                      "print(os.readlink('/proc/self/ns/net'))\n"
                      "try:\n"
                      "    socket.create_connection(('127.0.0.1', 80), 3); print('connected')\n"
                      "except OSError:\n"
                      "    pass\n"));
      ASSERT_TRUE(r.succeeded()) << r.stderr_text;
      EXPECT_NE(first_line(r.stdout_text), dirty) << dirt;
      EXPECT_EQ(r.stdout_text.find("connected"), std::string::npos) << dirt;
      replaced = pool.stats().discarded > discarded;
      if (replaced) {
        EXPECT_FALSE(r.pooled_network) << dirt;
      }
    }
    EXPECT_TRUE(replaced) << dirt << ": no run drew the dirty namespace";
    if (held >= 0) close(held);
  }
}

TEST(SandboxTest, RootRunsNeverShareTheirNamespace) {
  if (geteuid() != 0) GTEST_SKIP() << "network namespaces need root here";
  SandboxSpec root = python_spec(kPrintNetns);
  root.uid = root.gid = -1;
  const std::int64_t discarded = NetnsPool::shared().stats().discarded;
  SandboxResult r = run_ok(root);
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_TRUE(r.pooled_network);
  SandboxResult next = run_ok(python_spec(kPrintNetns));
  ASSERT_TRUE(next.succeeded()) << next.stderr_text;
  EXPECT_NE(first_line(next.stdout_text), first_line(r.stdout_text));
  EXPECT_EQ(NetnsPool::shared().stats().discarded, discarded + 1);
}

TEST(SandboxTest, RunsUnderALeasedUid) {
  if (geteuid() != 0) GTEST_SKIP() << "the uid switch needs root";
  SandboxResult r =
      run_ok(python_spec("import os; print(os.getuid(), os.getgid(), os.getgroups())"));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_TRUE(r.isolated);
  const int uid = std::stoi(r.stdout_text);
  EXPECT_GE(uid, kSandboxUidBase);
  EXPECT_LT(uid, kSandboxUidBase + kSandboxUidCount);
  EXPECT_NE(r.stdout_text.find(" []"), std::string::npos) << r.stdout_text;
}

TEST(SandboxTest, ConcurrentIsolatedRunsDoNotHangWhileTheWorkerAllocates) {
  // The namespace's init used to call glibc's fork(), which takes the malloc arena locks: in a
  // child of a raw clone those are copies, and one held by another worker thread at the clone
  // stayed held, so the init hung until the run's timeout (most runs, with threads allocating).
  constexpr int kRuns = 120, kRunners = 6;
  std::atomic<bool> stop{false};
  std::vector<std::thread> allocators;
  for (int i = 0; i < 2; ++i) {
    allocators.emplace_back([&] {
      while (!stop) {
        std::vector<std::string> garbage;
        for (int j = 0; j < 100; ++j) garbage.emplace_back(200, 'x');
      }
    });
  }
  std::atomic<int> next{0}, hung{0}, failed{0};
  std::vector<std::thread> runners;
  for (int t = 0; t < kRunners; ++t) {
    runners.emplace_back([&] {
      for (int i = next++; i < kRuns; i = next++) {
        SandboxSpec spec;
        spec.argv = {"/bin/true"};
        spec.timeout_seconds = 5;
        auto r = run_sandboxed(spec);
        if (!r.ok() || !r->succeeded()) ++failed;
        if (r.ok() && r->timed_out) ++hung;
      }
    });
  }
  for (auto& t : runners) t.join();
  stop = true;
  for (auto& t : allocators) t.join();
  EXPECT_EQ(hung.load(), 0);
  EXPECT_EQ(failed.load(), 0);
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
