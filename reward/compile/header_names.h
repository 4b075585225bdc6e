// The names a heavier header tier could declare, for compile_diagnostics.h: an undeclared name
// that appears nowhere in the text of any header the full tier (<torch/extension.h>, CUDA's
// headers) can reach is undeclared there too, so a light tier's error about it is the
// candidate's own and needs no second compile. Of the 37 RL answers of the small recipe's SFT
// checkpoint that did not compile, 7 stopped at such a name (`vfloat`, `FINITY`, `tanv`, a
// `functions=` entry named `row_sum_cuda` that the sources never define), each paying for a
// compile with all of torch's headers before (docs/BENCHMARKS.md, "Compile errors end sooner").
//
// An over-approximation by design: every identifier of every file read outside its comments,
// whatever its scope (a local variable of an inline function counts), through every conditional
// branch, macro body and literal. A name it holds only keeps the retry; a name it lacks decides, so
// the files read must cover every header the full tier includes: those under the toolchain's
// include folders, whole, and those the host compiler's dependency list of <torch/extension.h>
// names (the C++ library and the system headers torch pulls in).
#pragma once

#include <cstddef>
#include <string>
#include <unordered_set>
#include <vector>

namespace dice {

class HeaderNames {
 public:
  // Every identifier of every regular file under `dirs` (recursively, through symlinks) and of
  // each of `files`. Unreadable files are skipped and counted (unread()).
  static HeaderNames read(const std::vector<std::string>& dirs,
                          const std::vector<std::string>& files);

  // Whether any header read spells `name` as an identifier.
  bool may_declare(const std::string& name) const { return names_.count(name) != 0; }
  // Whether an #include spelled `spelled` ("cuda_fp16.h", "ATen/ATen.h", "vector") names a file
  // that was read: its path ends with "/" + spelled.
  bool has_header(const std::string& spelled) const;

  size_t names() const { return names_.size(); }
  size_t files() const { return seen_.size(); }
  size_t unread() const { return unread_; }

 private:
  void add_file(const std::string& path);
  void add_names(const std::string& text);
  void add_code_names(const std::string& text, size_t begin, size_t end);
  static size_t line_end(const std::string& text, size_t i);

  std::unordered_set<std::string> names_;
  std::vector<std::string> paths_;        // each file read, as reached and as its real path
  std::unordered_set<std::string> seen_;  // real paths: each file is read once
  size_t unread_ = 0;
};

// The prerequisites of a make rule as `g++ -M` prints it ("probe.o: a.h \\\n b.h"): the
// files after the target, in order.
std::vector<std::string> make_rule_prerequisites(const std::string& rule);

}  // namespace dice
