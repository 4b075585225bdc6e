// A program dice-eval starts (dice-cluster up, wait and down): stdin from /dev/null, stdout and
// stderr appended to a log file, in a process group of its own (a Ctrl-C at the terminal reaches
// dice-eval only, which decides what the children do), polled without blocking so the driver can
// print progress and notice Ctrl-C meanwhile.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace dice::eval {

class Subprocess {
 public:
  // Starts argv[0] (a path) with `argv`, its output appended to `log_path`. With
  // `die_with_parent` the child gets SIGKILL when dice-eval dies (a `wait` left behind would only
  // poll); the services dice-cluster up starts are detached and never affected. IOError when
  // the log cannot be opened or fork fails; an executable that cannot run exits 127.
  static Result<Subprocess> start(const std::vector<std::string>& argv, const std::string& log_path,
                                  bool die_with_parent);

  Subprocess(Subprocess&& other) noexcept;
  Subprocess& operator=(Subprocess&& other) noexcept;
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;
  ~Subprocess();  // SIGKILLs and reaps a child still running

  // Its exit status once it ended (128 + N when signal N ended it); nullopt while it runs.
  std::optional<int> poll();
  // Blocks until it ends; its exit status as poll() gives it.
  int wait();
  // Sends `sig` while it runs.
  void signal(int sig);
  // Lets it run on unwatched: the destructor no longer kills it.
  void detach() { pid_ = -1; }

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// Runs `argv` to its end with its output appended to `log_path`: its exit status.
Result<int> run_to_end(const std::vector<std::string>& argv, const std::string& log_path);

// The last `lines` lines of a text file ("" when it cannot be read).
std::string tail_of_file(const std::string& path, int lines);

}  // namespace dice::eval
