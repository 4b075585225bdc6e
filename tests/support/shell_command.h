// Running a command line as a test would by hand (through /bin/sh, stderr into stdout), and
// reading a file whole: what the tests that drive dice's executables as processes share.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace dice::testing_util {

struct CommandResult {
  int rc = -1;         // exit status; -1 when it did not exit normally or could not start
  std::string output;  // stdout and stderr, interleaved
};

inline CommandResult run_command(const std::string& command) {
  CommandResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> buffer;
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) r.output += buffer.data();
  const int status = pclose(pipe);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The file's bytes ("" when it cannot be read).
inline std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace dice::testing_util
