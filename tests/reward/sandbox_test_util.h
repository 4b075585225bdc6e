// Helpers the sandbox test files share: a python command in a sandbox, and running one.
#pragma once

#include <string>

#include "reward/sandbox/sandbox.h"

#include <gtest/gtest.h>

namespace dice {
namespace sandbox_test {

// Python that the sandbox uid can execute (the pyenv shim under /root is not reachable).
constexpr char kPython[] = "/usr/bin/python3";

// `code` run by kPython -c, with small limits (a test's own run needs little).
inline SandboxSpec python_spec(const std::string& code, double timeout_seconds = 30,
                               std::int64_t memory_limit_mb = 2048) {
  SandboxSpec spec;
  spec.argv = {kPython, "-c", code};
  spec.timeout_seconds = timeout_seconds;
  spec.memory_limit_mb = memory_limit_mb;
  spec.max_processes = 32;
  spec.max_output_mb = 1;
  return spec;
}

// run_sandboxed(spec), expected to start (the worker's own errors fail the test).
inline SandboxResult run_ok(const SandboxSpec& spec) {
  auto result = run_sandboxed(spec);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? result.value() : SandboxResult{};
}

}  // namespace sandbox_test
}  // namespace dice
