// Deliberately broken variants of a candidate file, for checking that a judge rejects them.
//
// Both edits act on one store: the last array-element assignment `A[...] = value;` (plain `=`,
// not `+=` or `==`) in the last `__global__` function of the file that has one; in the kernels
// this is almost always the write of the output.
//   wrong_value        `A[i] = value;`  ->  `A[i] = (value) * 1.5f + 1.0f;`  every stored value is
//                      scaled and shifted (so zeros change too), far outside any tolerance
//   store_off_by_one   `A[i] = value;`  ->  `A[(i) + 1] = value;`     the output is shifted by one
//                      element (and the first one left unwritten)
// Shifting the thread index instead would leave element-wise kernels almost right (each thread
// still pairs input i with output i), which is why the store itself is edited.
// The edits stay inside the CUDA source string, so the file still parses as Python. A file with
// no kernel or no such store gets no variants (e.g. one that only calls cuDNN). Limits: a store
// in a branch that never runs, or into a bool output (true stays true), changes nothing; a judge
// that calls such a variant correct is right, and the comparison lists them apart.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dice {

struct BrokenVariant {
  std::string name;    // "wrong_value" or "store_off_by_one"
  std::string source;  // the edited file
  std::string edit;    // what changed, for logs: "line 42: out[idx] = ... -> ..."
};

// The variants of `source`, in the order above; empty when no store was found.
std::vector<BrokenVariant> broken_variants(std::string_view source);

}  // namespace dice
