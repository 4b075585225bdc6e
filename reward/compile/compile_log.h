// What a compiler's run tells the candidate: how it failed, and an excerpt of its output for the
// verdict that quotes no file the candidate did not write.
//
// Why the excerpt is filtered: gcc and nvcc print the source line a diagnostic points at, so a
// candidate that writes `#include "/etc/passwd"` got the host's first line of /etc/passwd back in
// its verdict. The filter sorts every diagnostic by the file it points into:
//
//   own      kernels.cu, binding.cpp of the build folder   kept as is
//            (and cuda_sources, cpp_sources: binding.h's
//            #line names for the candidate's text)
//   public   under a toolchain include folder (torch,      message kept; each quoted source
//            CUDA, /usr/include, gcc's own headers)        line -> "[line of PATH omitted]"
//   other    anything else (/etc/passwd, another build)    message -> "[message omitted]",
//                                                          quoted lines as for public
//
// A diagnostic is a line "path:line:col: kind: message" (gcc; also "path: In function ..." and
// "path:line:col:   required from here") or "path(line): kind: message" (nvcc's EDG front end);
// the indented lines after it (gcc's "  12 | code" and caret, EDG's "  code", caret and
// "detected during" context) are its quoted lines. "In file included from" chains, compiler
// summaries ("2 errors detected ...", "compilation terminated.") and blank lines are kept. The
// compilers indent every quoted line, so no file content can pose as a diagnostic line.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "reward/sandbox/sandbox.h"
#include "schemas/verdict.capnp.h"

namespace dice {

// Whose files a compile's diagnostics may quote.
struct CompileLogPolicy {
  // The compile's working folder (relative paths in diagnostics are relative to it). Required.
  std::string build_dir;
  // The candidate's files, relative to build_dir: the translation units, and the names their
  // #line directives give the candidate's own text (binding.h). Default: kernels.cu, binding.cpp,
  // cuda_sources, cpp_sources
  std::vector<std::string> own_files = {"kernels.cu", "binding.cpp", "cuda_sources", "cpp_sources"};
  // Folders of public headers whose diagnostics keep their message (absolute). Default: none
  std::vector<std::string> public_roots;
};

// How a compiler process that did not succeed ended.
struct CompilerFailure {
  // COMPILE_ERROR, COMPILE_TIMEOUT, RESOURCE_LIMIT, or INTERNAL_ERROR / SANDBOX_UNAVAILABLE when
  // the sandbox could not run it.
  schema::FailureClass failure = schema::FailureClass::COMPILE_ERROR;
  // A plain compile error: the source may compile with more of torch's headers (the next header
  // tier). Everything else (the time or memory ran out, a compiler died of a signal or crashed
  // on the source) ends the build: another tier would end the same way, only later.
  bool plain_error = true;
};

// From the sandbox's view (timeout, signal) and the compiler drivers' own reports (nvcc: "'cicc'
// died due to signal 9", EDG: "catastrophic error: out of memory", gcc: "out of memory
// allocating", "Killed signal terminated program", "internal compiler error"). Only unindented
// lines count, so a quoted source line (say a TORCH_CHECK saying "out of memory") never does.
CompilerFailure classify_compiler_failure(const SandboxResult& run);

// Where one unindented line of compiler output points (see the top of this file): the file as
// printed, its line (0 for gcc's "path: In function ..."), and where the message starts.
struct DiagnosticLocation {
  std::string path;
  int line = 0;
  size_t message_at = 0;
};
std::optional<DiagnosticLocation> diagnostic_location(const std::string& line);

// `log` with what the policy says must not be quoted left out (see the top of this file).
std::string redact_compiler_log(const std::string& log, const CompileLogPolicy& policy);

// Error lines of a compiler's output: each line that mentions an error, with the line after it,
// up to `max_lines`; the first lines when there is no such line.
std::string trim_compiler_log(const std::string& output, int max_lines);

// The verdict's excerpt of a compiler's output: redacted, then trimmed.
std::string compiler_log_excerpt(const std::string& output, const CompileLogPolicy& policy,
                                 int max_lines);

}  // namespace dice
