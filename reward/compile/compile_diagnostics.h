// Whether a compile error in a light header tier (compile.h: split, lean, slim) is the
// candidate's own, so that heavier headers cannot fix it and the build may end there, or may
// only mean that the source uses more of torch than the tier's headers have (then the next tier
// decides, as before this reader existed).
//
// It reads the compiler's output (nvcc's EDG front end: `cuda_sources(8): error: expected a
// ";"`, gcc: `cpp_sources:8:3: error: expected ';' before 'if'`) and decides on the FIRST error:
// a later error may be a consequence of an earlier one (an undeclared type makes the rest of its
// statement unparsable), the first cannot be one of another reported error. It is the
// candidate's own when it points into the candidate's text (cuda_sources, cpp_sources: the
// #line names binding.h gives it) and is one of:
//
//   syntax       "expected a ...", "expected ';' before ...": the tokens are wrong whatever is
//                declared, unless a macro the tier lacks stands nearby (an unknown macro in a
//                declaration gives syntax errors and no lookup error), so an ALL_CAPS or __name
//                the candidate does not define within two lines before it, or a torch/c10 macro
//                used without parentheses anywhere, keeps the retry
//   own name     an unqualified name the candidate declares itself is undeclared where it is
//                used (a scope error, a use before the declaration)
//   own member   a member missing from a class the candidate declares, or asked of a built-in type
//   arguments    too many or too few arguments to a function the candidate declares
//   redefinition both definitions in the candidate's text
//   number       a number the lexer cannot read (`0..f`): text lexes the same in every tier
//   conversion   between built-in types only ("const float *" to "float *")
//   return       gcc's "return-statement with a value, in function returning 'void'" (and no value
//                in a non-void one)
//   incomplete   a class the candidate declares and never defines
//   missing file an #include of the candidate's that names no file (the tiers share their paths)
//   unknown name an unqualified undeclared name that no header of the full tier spells at all
//                (header_names.h), in the split tier only one the candidate's sources spell once
//                (the split may have put a declaration in the other file); not where an
//                #include of the candidate's names a header that was not read, nor where a
//                #define of its pastes tokens (##: a pasted name is spelled nowhere)
//
// Everything else retries: names from torch, ATen, c10, pybind11 or std (qualified or not,
// unless the candidate declares them), errors inside headers, errors the compiler names no
// place for (ptxas, the driver), ambiguous overloads, anything not listed. In the split tier
// only syntax errors, malformed numbers, redefinitions, members of built-in types and unknown
// names decide: the split itself may have put a declaration on the wrong side
// (split_sources.h), so there a missing name of the candidate's, a member or an overload may be
// the split's fault, while it never writes a definition twice into one file; and a syntax error
// on a line where the split wrote text of its own (a launch it rewrote, a kernel's first line,
// where its stubs go) retries too, unless it is before the stub's call.
//
// Conservative by design: a false "the candidate's own" fails an honest kernel that heavier
// headers would have built, while a false retry only costs one more compile. A source with
// preprocessor conditionals on a macro it does not define (heavier headers might define it and
// change what compiles) always retries.
#pragma once

#include <string>

#include "reward/compile/binding.h"
#include "reward/compile/header_names.h"

namespace dice {

// Which tier's output is read.
enum class DiagnosticsScope {
  kSplit,    // the split build: syntax errors, redefinitions, built-in members (see above)
  kHeaders,  // lean or slim headers in front of the candidate's unchanged text
};

// Which compiler printed the output: nvcc (EDG front end, then the host compiler on its output)
// always knows CUDA's keywords (__global__, __restrict__...); g++ in the binding file may not.
enum class DiagnosticsCompiler { kNvcc, kHostCxx };

struct CompileErrorReading {
  bool own_error = false;  // the first error is the candidate's own: no heavier tier helps
  std::string why;         // what decided: "syntax error at cuda_sources:8", or why it retries
};

// Reads a failed compile's output (stderr and stdout) for `ext`'s sources. Without
// `header_names` no unknown name decides.
CompileErrorReading read_compile_errors(const std::string& output, const ExtensionSources& ext,
                                        DiagnosticsScope scope, DiagnosticsCompiler compiler,
                                        const HeaderNames* header_names = nullptr);

}  // namespace dice
