#include "common/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace dice {
namespace {

// Captures what the logger writes to stderr.
std::string capture_stderr(void (*emit)()) {
  std::fflush(stderr);
  int saved = dup(STDERR_FILENO);
  char path[] = "/tmp/dice_log_testXXXXXX";
  int fd = mkstemp(path);
  dup2(fd, STDERR_FILENO);
  emit();
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::string out;
  char buf[4096];
  lseek(fd, 0, SEEK_SET);
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  unlink(path);
  return out;
}

TEST(LogTest, LineCarriesRunIdComponentAndFields) {
  log_configure({LogLevel::kInfo, "reward", "run-42"});
  std::string out = capture_stderr(
      [] { DICE_LOG(Info) << "compiled kernel" << kv("task", 17) << kv("note", "two words"); });
  EXPECT_NE(out.find("level=info"), std::string::npos) << out;
  EXPECT_NE(out.find("run=run-42"), std::string::npos) << out;
  EXPECT_NE(out.find("component=reward"), std::string::npos) << out;
  EXPECT_NE(out.find("msg=\"compiled kernel\""), std::string::npos) << out;
  EXPECT_NE(out.find("task=17"), std::string::npos) << out;
  EXPECT_NE(out.find("note=\"two words\""), std::string::npos) << out;
  EXPECT_NE(out.find("at=log_test.cc:"), std::string::npos) << out;
}

int g_evaluations = 0;
int counted() {
  return ++g_evaluations;
}

TEST(LogTest, LinesBelowLevelAreSkippedWithoutFormatting) {
  log_configure({LogLevel::kWarn, "t", "r"});
  g_evaluations = 0;
  std::string out = capture_stderr([] { DICE_LOG(Info) << counted(); });
  EXPECT_EQ(out, "");
  EXPECT_EQ(g_evaluations, 0);
  out = capture_stderr([] { DICE_LOG(Error) << counted(); });
  EXPECT_EQ(g_evaluations, 1);
  EXPECT_NE(out.find("level=error"), std::string::npos);
}

TEST(LogTest, QuotesAndEscapes) {
  EXPECT_EQ(logfmt_quote("plain"), "plain");
  EXPECT_EQ(logfmt_quote(""), "\"\"");
  EXPECT_EQ(logfmt_quote("a \"b\"\n"), "\"a \\\"b\\\"\\n\"");
}

TEST(LogTest, ParsesLevels) {
  LogLevel level = LogLevel::kInfo;
  EXPECT_TRUE(parse_log_level("debug", &level));
  EXPECT_EQ(level, LogLevel::kDebug);
  EXPECT_FALSE(parse_log_level("verbose", &level));
}

}  // namespace
}  // namespace dice
