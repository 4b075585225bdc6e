#include "common/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <map>
#include <string>

#include "common/read_file.h"

namespace dice {
namespace {

// The parent pid in /proc/<pid>/stat: the field after the command, which is in parentheses and
// may itself hold spaces and parentheses (hence the last ')'). -1 when unreadable: a process
// that ends between the open and the read fails the read with ESRCH (read_file says so; a
// stream's buffer threw it, and the thread that asked ended the process).
pid_t parent_of(const std::string& pid) {
  const Result<std::string> read = read_file("/proc/" + pid + "/stat");
  if (!read.ok()) return -1;
  const std::string& stat = *read;
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos || close + 4 >= stat.size()) return -1;
  // ") S 1234 ...": state, then the parent.
  const std::size_t parent = stat.find(' ', close + 2);
  if (parent == std::string::npos) return -1;
  return static_cast<pid_t>(std::strtol(stat.c_str() + parent + 1, nullptr, 10));
}

}  // namespace

std::vector<pid_t> process_tree(pid_t root) {
  std::multimap<pid_t, pid_t> children;  // parent -> child
  bool root_seen = false;
  if (DIR* proc = opendir("/proc")) {
    while (const dirent* entry = readdir(proc)) {
      const std::string name = entry->d_name;
      if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
      const pid_t pid = static_cast<pid_t>(std::strtol(name.c_str(), nullptr, 10));
      const pid_t parent = parent_of(name);
      if (parent < 0) continue;  // ended while read
      if (pid == root) root_seen = true;
      children.emplace(parent, pid);
    }
    closedir(proc);
  }
  std::vector<pid_t> tree;
  if (!root_seen) return tree;
  tree.push_back(root);
  // Bounded by the entries read: a pid reused while /proc was read could close a cycle.
  for (std::size_t next = 0; next < tree.size() && tree.size() <= children.size(); ++next) {
    const auto range = children.equal_range(tree[next]);
    for (auto it = range.first; it != range.second; ++it) tree.push_back(it->second);
  }
  return tree;
}

}  // namespace dice
