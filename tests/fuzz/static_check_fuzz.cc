// libFuzzer target: the static check's entry, run_static_check: the candidate file goes to
// python/static_check.py in the sandbox, as the reward pipeline sends it. Slow (a sandboxed
// Python process per input, some 20 a second), so it finds only what is near its seeds (the
// reward test corpus); the C++ side of the JSON it reads back is covered too.
//
// Checked beyond "no crash": the checker answers every file with a verdict. An error Status is
// the checker itself failing (a Python exception, say), which the pipeline reports as an
// internal error instead of judging the candidate: that aborts, and the fuzzer keeps the file.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "reward/static_check.h"

// NOLINTNEXTLINE(readability-identifier-naming): the name libFuzzer calls
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  dice::StaticCheckOptions options;
  options.python = "/usr/bin/python3";  // reachable by the sandbox's user, as in the tests
  const std::string source(reinterpret_cast<const char*>(data), size);
  dice::Result<dice::StaticCheckResult> result = dice::run_static_check(source, options);
  if (!result.ok()) {
    std::fprintf(stderr, "static check failed: %s\n", result.status().to_string().c_str());
    std::abort();
  }
  return 0;
}
