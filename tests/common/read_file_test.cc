// common/read_file.h: the bytes come back whole (binary, NUL included), and each failure names
// the path with the right code.
#include "common/read_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.h"

namespace dice {
namespace {

TEST(ReadFileTest, ReturnsEveryByte) {
  testing_util::TempDir dir("read-file");
  const std::string bytes("line 1\r\n\0\xff tail", 15);
  std::ofstream(dir.sub("data.bin"), std::ios::binary) << bytes;
  auto text = read_file(dir.sub("data.bin"));
  ASSERT_TRUE(text.ok()) << text.status().to_string();
  EXPECT_EQ(*text, bytes);
  std::ofstream(dir.sub("empty"));
  EXPECT_EQ(read_file(dir.sub("empty")).value(), "");
}

TEST(ReadFileTest, FailuresNameThePath) {
  testing_util::TempDir dir("read-file");
  auto missing = read_file(dir.sub("nope.json"));
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), dir.sub("nope.json") + ": no such file");
  auto folder = read_file(dir.path());
  EXPECT_EQ(folder.status().code(), StatusCode::kIOError);
  EXPECT_EQ(folder.status().message(), dir.path() + ": is a directory, not a file");
  // Opened, then the read fails (address 0 of the process's memory is not mapped): an error
  // naming the path, not the bytes read so far as if they were the whole file.
  auto unreadable = read_file("/proc/self/mem");
  EXPECT_EQ(unreadable.status().code(), StatusCode::kIOError);
  EXPECT_NE(unreadable.status().message().find("/proc/self/mem: read failed"), std::string::npos)
      << unreadable.status().to_string();
  if (geteuid() != 0) {  // root reads a file whatever its mode
    std::ofstream(dir.sub("locked")) << "x";
    ASSERT_EQ(chmod(dir.sub("locked").c_str(), 0), 0);
    auto locked = read_file(dir.sub("locked"));
    EXPECT_EQ(locked.status().code(), StatusCode::kIOError);
    EXPECT_NE(locked.status().message().find(dir.sub("locked") + ": cannot open"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace dice
