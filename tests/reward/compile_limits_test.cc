// Compile limits without a compiler: the memory budget concurrent builds reserve from, a
// candidate's time budget, how a failed compiler run is classified, the excerpt filter that keeps
// other files' contents out of verdicts, and the options' validation. Real compiles of
// pathological sources are in compile_test.cc.
#include <atomic>
#include <csignal>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/config/load.h"
#include "common/seconds_since.h"
#include "options/reward_options.h"
#include "reward/compile/compile.h"
#include "reward/compile/compile_limits.h"
#include "reward/compile/compile_log.h"

namespace dice {
namespace {

using FC = schema::FailureClass;

// Polls `done` until it holds or 10 s pass (no sleeping for a fixed time).
template <class F>
bool eventually(F done) {
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    if (seconds_since(start) > 10) return false;
    std::this_thread::yield();
  }
  return true;
}

TEST(MemoryBudgetTest, ACompileThatDoesNotFitWaitsUntilMemoryIsGivenBack) {
  MemoryBudget budget(1000);
  Result<MemoryBudget::Reservation> first = budget.reserve(600, 1);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(budget.reserved_mb(), 600);
  auto second = std::async(std::launch::async, [&] { return budget.reserve(600, 30); });
  ASSERT_TRUE(eventually([&] { return budget.waiting() == 1; }));
  EXPECT_EQ(second.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  first->release();
  Result<MemoryBudget::Reservation> got = second.get();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(budget.reserved_mb(), 600);
  { MemoryBudget::Reservation moved = std::move(got.value()); }  // destroyed: given back
  EXPECT_EQ(budget.reserved_mb(), 0);
}

TEST(MemoryBudgetTest, WaitIsBoundedAndCloseWakesWaiters) {
  MemoryBudget budget(1000);
  Result<MemoryBudget::Reservation> held = budget.reserve(1000, 1);
  ASSERT_TRUE(held.ok());
  const auto start = std::chrono::steady_clock::now();
  Result<MemoryBudget::Reservation> late = budget.reserve(1, 0.2);
  EXPECT_EQ(late.status().code(), StatusCode::kTimeout);
  EXPECT_NE(late.status().message().find("1000 of 1000 MiB held"), std::string::npos)
      << late.status().message();
  EXPECT_LT(seconds_since(start), 5);
  EXPECT_EQ(budget.waiting(), 0u);
  auto waiter = std::async(std::launch::async, [&] { return budget.reserve(10, 60); });
  ASSERT_TRUE(eventually([&] { return budget.waiting() == 1; }));
  budget.close();
  EXPECT_EQ(waiter.get().status().code(), StatusCode::kAborted);
}

// First come first served: a small request behind a large one that waits does not pass it.
TEST(MemoryBudgetTest, RequestsAreServedInOrder) {
  MemoryBudget budget(1000);
  Result<MemoryBudget::Reservation> held = budget.reserve(500, 1);
  ASSERT_TRUE(held.ok());
  auto large = std::async(std::launch::async, [&] { return budget.reserve(800, 30); });
  ASSERT_TRUE(eventually([&] { return budget.waiting() == 1; }));
  auto small = std::async(std::launch::async, [&] { return budget.reserve(100, 30); });
  ASSERT_TRUE(eventually([&] { return budget.waiting() == 2; }));
  EXPECT_EQ(small.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  held->release();
  Result<MemoryBudget::Reservation> large_got = large.get();
  ASSERT_TRUE(large_got.ok());
  Result<MemoryBudget::Reservation> small_got = small.get();  // 800 + 100 fit together
  ASSERT_TRUE(small_got.ok());
  EXPECT_EQ(budget.reserved_mb(), 900);
}

// More than the whole budget (a per-compile limit above it) runs alone instead of never.
TEST(MemoryBudgetTest, RequestAboveTheTotalTakesTheWholeBudget) {
  MemoryBudget budget(1000);
  Result<MemoryBudget::Reservation> big = budget.reserve(4000, 1);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->mb(), 1000);
  EXPECT_EQ(budget.reserve(1, 0.05).status().code(), StatusCode::kTimeout);
}

// A test double for the host's available memory (MemAvailable): what the budget reads instead
// of /proc/meminfo, set by the test.
class HostMemoryTestDouble {
 public:
  explicit HostMemoryTestDouble(std::int64_t available_mb) : available_mb_(available_mb) {}
  void set(std::int64_t mb) { available_mb_ = mb; }
  void fail() { failing_ = true; }
  AvailableMemoryReader reader() {
    return [this]() -> Result<std::int64_t> {
      if (failing_) return Status::io_error("test double: no reading");
      return available_mb_.load();
    };
  }

 private:
  std::atomic<std::int64_t> available_mb_;
  std::atomic<bool> failing_{false};
};

// Within the budget but not within what the host has: the build waits, and the timeout names the
// host.
TEST(MemoryBudgetTest, ABuildThatFitsTheBudgetWaitsWhileTheHostHasNoRoom) {
  HostMemoryTestDouble host(2000);
  MemoryBudget budget(100000, host.reader());
  Result<MemoryBudget::Reservation> late = budget.reserve(3000, 0.3);
  EXPECT_EQ(late.status().code(), StatusCode::kTimeout);
  EXPECT_NE(late.status().message().find("the host has 2000 MiB available"), std::string::npos)
      << late.status().message();
  EXPECT_EQ(budget.reserved_mb(), 0);
}

// No reservation is given back: the waiter sees the host's memory come free by looking again.
TEST(MemoryBudgetTest, AWaitingBuildStartsWhenTheHostFreesMemory) {
  HostMemoryTestDouble host(1000);
  MemoryBudget budget(100000, host.reader());
  auto waiter = std::async(std::launch::async, [&] { return budget.reserve(3000, 30); });
  ASSERT_TRUE(eventually([&] { return budget.waiting() == 1; }));
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  host.set(3000);
  Result<MemoryBudget::Reservation> got = waiter.get();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->mb(), 3000);
}

// Builds admitted a moment ago have not touched their memory yet: the host must cover every
// held reservation besides the new one, even though MemAvailable has not fallen.
TEST(MemoryBudgetTest, HeldReservationsCountAgainstTheHostsAvailableMemory) {
  HostMemoryTestDouble host(7000);
  MemoryBudget budget(100000, host.reader());
  Result<MemoryBudget::Reservation> first = budget.reserve(3000, 1);
  Result<MemoryBudget::Reservation> second = budget.reserve(3000, 1);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(budget.reserve(3000, 0.3).status().code(), StatusCode::kTimeout);  // 9000 > 7000
  first->release();
  EXPECT_TRUE(budget.reserve(3000, 1).ok());
}

// Where the host cannot be read, the budget alone decides (as before the host was looked at).
TEST(MemoryBudgetTest, AnUnreadableHostLeavesTheBudgetToDecide) {
  HostMemoryTestDouble host(0);
  host.fail();
  MemoryBudget budget(5000, host.reader());
  Result<MemoryBudget::Reservation> first = budget.reserve(3000, 1);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  Result<MemoryBudget::Reservation> second = budget.reserve(3000, 0.2);
  EXPECT_EQ(second.status().code(), StatusCode::kTimeout);
  EXPECT_NE(second.status().message().find("3000 of 5000 MiB held"), std::string::npos)
      << second.status().message();
}

// Issue 50 item 3: a build reserves what builds use (docs/BENCHMARKS.md), not its two compilers'
// address-space limits, so that on a 128 GiB GPU node the default budget (three quarters) lets
// 16 compile jobs build at once (2 x 8192 MiB each allowed 6).
TEST(MemoryBudgetTest, DefaultsLetSixteenBuildsRunOnA128GiBNode) {
  const CompileOptions defaults;
  const std::int64_t per_build =
      build_reservation_mb(defaults.build_memory_mb, defaults.memory_limit_mb);
  EXPECT_EQ(per_build, kBuildMemoryMb);
  const std::int64_t node_budget_mb = 131072 * 3 / 4;
  EXPECT_GE(node_budget_mb / per_build, 16);
  HostMemoryTestDouble host(120000);
  MemoryBudget budget(node_budget_mb, host.reader());
  std::vector<MemoryBudget::Reservation> held;
  for (int i = 0; i < 16; ++i) {
    Result<MemoryBudget::Reservation> r = budget.reserve(per_build, 0);
    ASSERT_TRUE(r.ok()) << "build " << i << ": " << r.status().to_string();
    held.push_back(std::move(r).value());
  }
}

// The reservation is never above what the build's two compilers may map.
TEST(MemoryBudgetTest, AReservationIsAtMostTwoCompilersLimits) {
  EXPECT_EQ(build_reservation_mb(3072, 8192), 3072);
  EXPECT_EQ(build_reservation_mb(3072, 1024), 2048);
}

TEST(MemoryBudgetTest, DefaultIsThreeQuartersOfTheHost) {
  Result<std::int64_t> host = host_memory_mb();
  ASSERT_TRUE(host.ok()) << host.status().to_string();
  EXPECT_GT(host.value(), 0);
  EXPECT_EQ(default_compile_memory_mb(), host.value() * 3 / 4);
  Result<std::int64_t> available = host_available_memory_mb();
  ASSERT_TRUE(available.ok()) << available.status().to_string();
  EXPECT_GT(available.value(), 0);
  EXPECT_LE(available.value(), host.value());
}

TEST(CompileBudgetTest, ClockStartsOnceForAllOfACandidatesBuilds) {
  CompileBudget budget(100);
  EXPECT_EQ(budget.seconds_left(), 100);  // not started: queued builds are not charged
  budget.start();
  const double left = budget.seconds_left();
  EXPECT_LE(left, 100);
  EXPECT_GT(left, 90);
  budget.start();  // a second module's build: same clock
  EXPECT_LE(budget.seconds_left(), left);
  CompileBudget spent(0.001);
  spent.start();
  ASSERT_TRUE(eventually([&] { return spent.seconds_left() <= 0; }));
}

SandboxResult failed_run(const std::string& err, int exit_code = 1) {
  SandboxResult r;
  r.exit_code = exit_code;
  r.stderr_text = err;
  return r;
}

TEST(ClassifyCompilerFailureTest, OnlyPlainErrorsMayFallThroughToAnotherTier) {
  SandboxResult timed_out;
  timed_out.timed_out = true;
  timed_out.signal = SIGKILL;
  const CompilerFailure t = classify_compiler_failure(timed_out);
  EXPECT_EQ(t.failure, FC::COMPILE_TIMEOUT);
  EXPECT_FALSE(t.plain_error);

  SandboxResult killed;
  killed.signal = SIGKILL;  // the OOM killer, or RLIMIT_CPU's hard limit
  EXPECT_EQ(classify_compiler_failure(killed).failure, FC::RESOURCE_LIMIT);
  EXPECT_FALSE(classify_compiler_failure(killed).plain_error);

  const CompilerFailure edg = classify_compiler_failure(
      failed_run("bomb.cu(2): catastrophic error: out of memory\n  static constexpr long v;\n"
                 "\n1 catastrophic error detected in the compilation of \"bomb.cu\".\n",
                 4));
  EXPECT_EQ(edg.failure, FC::RESOURCE_LIMIT);
  EXPECT_FALSE(edg.plain_error);
  EXPECT_EQ(classify_compiler_failure(
                failed_run("cc1plus: out of memory allocating 65536 bytes after a total of 8 "
                           "bytes\n"))
                .failure,
            FC::RESOURCE_LIMIT);
  EXPECT_EQ(classify_compiler_failure(
                failed_run("c++: fatal error: Killed signal terminated program cc1plus\n"))
                .failure,
            FC::RESOURCE_LIMIT);
  EXPECT_EQ(classify_compiler_failure(
                failed_run("nvcc error   : 'cicc' died due to signal 9 (Kill signal)\n"))
                .failure,
            FC::RESOURCE_LIMIT);
  // The linker past RLIMIT_FSIZE (a module over max_module_mb), as g++ reports it.
  const CompilerFailure fsize = classify_compiler_failure(failed_run(
      "collect2: fatal error: ld terminated with signal 25 [File size limit exceeded]\n"));
  EXPECT_EQ(fsize.failure, FC::RESOURCE_LIMIT);
  EXPECT_FALSE(fsize.plain_error);
  const CompilerFailure segv = classify_compiler_failure(
      failed_run("nvcc error   : 'cudafe++' died due to signal 11 (Invalid memory reference)\n"));
  EXPECT_EQ(segv.failure, FC::COMPILE_ERROR);
  EXPECT_FALSE(segv.plain_error);
  EXPECT_FALSE(classify_compiler_failure(
                   failed_run("kernels.cu:9:1: internal compiler error: Segmentation fault\n"))
                   .plain_error);

  // A plain error, also when a quoted source line says "out of memory" (indented: not the
  // compiler's own words).
  const CompilerFailure plain = classify_compiler_failure(
      failed_run("kernels.cu(5): error: identifier \"q\" is undefined\n"
                 "    TORCH_CHECK(q, \"catastrophic error: out of memory\");\n    ^\n"));
  EXPECT_EQ(plain.failure, FC::COMPILE_ERROR);
  EXPECT_TRUE(plain.plain_error);
}

const char kPasswdLine[] = "root:x:0:0:root:/root:/bin/bash";

CompileLogPolicy policy() {
  CompileLogPolicy p;
  p.build_dir = "/cache/abc.build-1-0";
  p.public_roots = {"/usr/include", "/usr/lib/python3/dist-packages/torch/include"};
  return p;
}

TEST(RedactCompilerLogTest, GccQuotesOfAnotherFileAreLeftOut) {
  const std::string log = std::string() +
                          "In file included from kernels.cu:3:\n"
                          "/etc/passwd:1:5: error: found ':' in nested-name-specifier, expected "
                          "'::'\n"
                          "    1 | " +
                          kPasswdLine +
                          "\n"
                          "      |     ^\n"
                          "      |     ::\n"
                          "/etc/passwd:1:1: error: 'root' does not name a type\n"
                          "    1 | " +
                          kPasswdLine +
                          "\n"
                          "      | ^~~~\n"
                          "/etc/passwd:2:1: error: invalid preprocessing directive #secret\n"
                          "kernels.cu:7:3: error: 'q' was not declared in this scope\n"
                          "    7 |   y[i] = q;\n"
                          "      |          ^\n";
  const std::string out = redact_compiler_log(log, policy());
  EXPECT_EQ(out,
            "In file included from kernels.cu:3:\n"
            "/etc/passwd:1:5: error: [message omitted]\n"
            "  [line of /etc/passwd omitted]\n"
            "/etc/passwd:1:1: error: [message omitted]\n"
            "  [line of /etc/passwd omitted]\n"
            "/etc/passwd:2:1: error: [message omitted]\n"
            "kernels.cu:7:3: error: 'q' was not declared in this scope\n"
            "    7 |   y[i] = q;\n"
            "      |          ^");
}

TEST(RedactCompilerLogTest, NvccQuotesOfAnotherFileAreLeftOut) {
  const std::string log = std::string() +
                          "/etc/passwd(1): error: this declaration has no storage class or type "
                          "specifier\n  " +
                          kPasswdLine +
                          "\n  ^\n\n"
                          "/etc/passwd(1): error: identifier \"daemon\" is undefined\n  " +
                          kPasswdLine +
                          "\n      ^\n\n"
                          "kernels.cu(5): error: identifier \"q\" is undefined\n"
                          "    y[i] = q;\n           ^\n\n"
                          "3 errors detected in the compilation of \"kernels.cu\".\n";
  const std::string out = redact_compiler_log(log, policy());
  EXPECT_EQ(out.find("root"), std::string::npos) << out;
  EXPECT_EQ(out.find("daemon"), std::string::npos) << out;
  EXPECT_NE(out.find("/etc/passwd(1): error: [message omitted]\n  [line of /etc/passwd omitted]\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("kernels.cu(5): error: identifier \"q\" is undefined\n    y[i] = q;\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("3 errors detected in the compilation of \"kernels.cu\"."), std::string::npos);
  // The excerpt the verdict gets: trimmed after redaction.
  const std::string excerpt = compiler_log_excerpt(log, policy(), 20);
  EXPECT_EQ(excerpt.find(kPasswdLine), std::string::npos) << excerpt;
  EXPECT_NE(excerpt.find("identifier \"q\" is undefined"), std::string::npos) << excerpt;
}

// A public header's diagnostic keeps its message (what the candidate called wrongly) but not
// its source lines; "required from here" in the candidate's own file stays whole.
TEST(RedactCompilerLogTest, PublicHeadersKeepMessagesNotLines) {
  const std::string torch = "/usr/lib/python3/dist-packages/torch/include/ATen/core/TensorBody.h";
  const std::string log =
      "In file included from /usr/include/python3.11/Python.h:12,\n"
      "                 from kernels.cu:1:\n" +
      torch + ": In instantiation of 'T at::Tensor::item() const [with T = int]':\n" +
      "kernels.cu:9:20:   required from here\n" + torch +
      ":412:5: error: no matching function for call to 'g(int&)'\n"
      "  412 |     return g(x);\n"
      "      |            ^\n" +
      torch +
      ":300:3: note: candidate: 'void g(float)'\n"
      "  300 |   void g(float);\n"
      "      |   ^\n";
  const std::string out = redact_compiler_log(log, policy());
  EXPECT_EQ(out,
            "In file included from /usr/include/python3.11/Python.h:12,\n"
            "                 from kernels.cu:1:\n" +
                torch +
                ": In instantiation of 'T at::Tensor::item() const [with T = int]':\n"
                "kernels.cu:9:20:   required from here\n" +
                torch + ":412:5: error: no matching function for call to 'g(int&)'\n" +
                "  [line of " + torch + " omitted]\n" + torch +
                ":300:3: note: candidate: 'void g(float)'\n" + "  [line of " + torch + " omitted]");
}

// Only the build's own files are own: not a path that climbs out of a public root, nor another
// build's kernels.cu; "./kernels.cu" and the absolute path of the build's are.
TEST(RedactCompilerLogTest, OwnAndPublicAreDecidedByThePathItself) {
  const std::string log =
      "/usr/include/../../etc/shadow:1:1: error: 'x' does not name a type\n"
      "    1 | secret-one\n"
      "../def.build-2-0/kernels.cu(3): error: identifier \"y\" is undefined\n"
      "  secret-two\n"
      "./kernels.cu(4): error: identifier \"z\" is undefined\n"
      "  own-line-one\n"
      "/cache/abc.build-1-0/binding.cpp:5:1: error: expected ';'\n"
      "    5 | own-line-two\n"
      "<command-line>: error: macro names must be identifiers\n";
  const std::string out = redact_compiler_log(log, policy());
  EXPECT_EQ(out.find("secret"), std::string::npos) << out;
  EXPECT_NE(out.find("own-line-one"), std::string::npos) << out;
  EXPECT_NE(out.find("own-line-two"), std::string::npos) << out;
  EXPECT_NE(out.find("macro names must be identifiers"), std::string::npos) << out;
}

// Continuation lines after a driver's message belong to no file's diagnostic; an include chain's
// "from" lines are path only. Neither starts an attribution that keeps a later file's lines.
TEST(RedactCompilerLogTest, EdgContextLinesFollowTheirDiagnostic) {
  const std::string log =
      "/etc/passwd(2): catastrophic error: out of memory\n"
      "  daemon:x:1:1\n"
      "  ^\n"
      "          detected during:\n"
      "            instantiation of class \"B<1>\" at line 2 of /etc/passwd\n"
      "\n"
      "1 catastrophic error detected in the compilation of \"kernels.cu\".\n"
      "Compilation terminated.\n";
  const std::string out = redact_compiler_log(log, policy());
  EXPECT_EQ(out,
            "/etc/passwd(2): catastrophic error: [message omitted]\n"
            "  [line of /etc/passwd omitted]\n"
            "\n"
            "1 catastrophic error detected in the compilation of \"kernels.cu\".\n"
            "Compilation terminated.");
}

TEST(CompileOptionsTest, MemoryBudgetBelowOneBuildIsRefusedByKey) {
  Result<RewardOptions> bad = config::load_config_text<RewardOptions>(
      "compile_build_memory_mb: 4096\ncompile_memory_mb: 3000\n", "t.yaml", {}, "/base");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("compile_memory_mb: at least one build's reservation "
                                        "(4096"),
            std::string::npos)
      << bad.status().message();
  // A reservation above the two compilers' limits is their limits: the budget must hold those.
  Result<RewardOptions> capped = config::load_config_text<RewardOptions>(
      "compile_memory_limit_mb: 1024\ncompile_memory_mb: 2048\n", "t.yaml", {}, "/base");
  EXPECT_TRUE(capped.ok()) << capped.status().to_string();
  Result<RewardOptions> small_estimate = config::load_config_text<RewardOptions>(
      "compile_build_memory_mb: 100\n", "t.yaml", {}, "/base");
  EXPECT_FALSE(small_estimate.ok());
  Result<RewardOptions> zero =
      config::load_config_text<RewardOptions>("compile_budget_seconds: 0\n", "t.yaml", {}, "/base");
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("compile_budget_seconds"), std::string::npos)
      << zero.status().message();
  Result<RewardOptions> good = config::load_config_text<RewardOptions>(
      "compile_budget_seconds: 60\ncompile_memory_mb: 0\n", "t.yaml", {}, "/base");
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  EXPECT_EQ(good->compile_budget_seconds, 60);
  EXPECT_EQ(good->compile_memory_limit_mb, 8192);
  // The service's default is the compiler's: one measured figure (compile_limits.h).
  EXPECT_EQ(good->compile_build_memory_mb, kBuildMemoryMb);
  EXPECT_EQ(good->compile_build_memory_mb, CompileOptions().build_memory_mb);
}

}  // namespace
}  // namespace dice
