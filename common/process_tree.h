// The processes of a tree, read from /proc: a process and every descendant it has now. For
// watchers that account for what a whole tree holds (reward/evaluate/gpu_memory_watch.h: a
// candidate's runner may fork, and each child's GPU memory is the candidate's).
#pragma once

#include <sys/types.h>

#include <vector>

namespace dice {

// `root` and its descendants as this process's PID namespace numbers them, root first; empty
// when `root` has ended. A snapshot: a process that starts or ends while /proc is read may be
// missing or listed.
std::vector<pid_t> process_tree(pid_t root);

}  // namespace dice
