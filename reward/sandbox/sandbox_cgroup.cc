#include "reward/sandbox/sandbox_cgroup.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

namespace dice {
namespace {

constexpr char kParentName[] = "dice-sandbox";

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool has_word(const std::string& text, const std::string& word) {
  std::istringstream in(text);
  for (std::string w; in >> w;) {
    if (w == word) return true;
  }
  return false;
}

Status write_text(const std::string& path, const std::string& text) {
  const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    return Status::unavailable("cgroup: cannot open " + path + ": " + strerror(errno));
  }
  const ssize_t n = write(fd, text.data(), text.size());
  const int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) {
    return Status::unavailable("cgroup: cannot write \"" + text + "\" to " + path + ": " +
                               strerror(err));
  }
  return Status::ok_status();
}

// The cgroup v2 mount point from /proc/self/mountinfo ("" when none).
std::string cgroup2_mount() {
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    // ... mount-point ... - fstype source options
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev, root, mount_point;
    fields >> id >> parent >> dev >> root >> mount_point;
    return mount_point;
  }
  return "";
}

// Makes <mount>/dice-sandbox with memory and pids delegated to its children; its path, or why not.
Status prepare_parent(std::string* parent) {
  const std::string mount = cgroup2_mount();
  if (mount.empty()) return Status::unavailable("cgroup: no cgroup v2 hierarchy is mounted");
  const std::string controllers = read_text(mount + "/cgroup.controllers");
  for (const char* needed : {"memory", "pids"}) {
    if (!has_word(controllers, needed)) {
      return Status::unavailable("cgroup: the cgroup v2 hierarchy at " + mount + " has no " +
                                 needed + " controller (a cgroup v1 or hybrid host)");
    }
  }
  const std::string enabled = read_text(mount + "/cgroup.subtree_control");
  if (!has_word(enabled, "memory") || !has_word(enabled, "pids")) {
    DICE_RETURN_IF_ERROR(write_text(mount + "/cgroup.subtree_control", "+memory +pids"));
  }
  *parent = mount + "/" + kParentName;
  if (mkdir(parent->c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::unavailable("cgroup: cannot create " + *parent + ": " + strerror(errno));
  }
  return write_text(*parent + "/cgroup.subtree_control", "+memory +pids");
}

struct Parent {
  Status status = Status::ok_status();
  std::string path;
};

const Parent& parent_cgroup() {
  static const Parent* parent = [] {
    auto* p = new Parent;
    p->status = prepare_parent(&p->path);
    return p;
  }();
  return *parent;
}

std::atomic<std::uint64_t> run_counter{0};

}  // namespace

Status sandbox_cgroups_available() {
  return parent_cgroup().status;
}

Result<std::unique_ptr<RunCgroup>> RunCgroup::create(std::int64_t memory_bytes, int max_pids) {
  const Parent& parent = parent_cgroup();
  if (!parent.status.ok()) return parent.status;
  std::unique_ptr<RunCgroup> cg(new RunCgroup());
  const std::string path = parent.path + "/run-" + std::to_string(getpid()) + "-" +
                           std::to_string(run_counter.fetch_add(1));
  if (mkdir(path.c_str(), 0755) != 0) {
    return Status::unavailable("cgroup: cannot create " + path + ": " + strerror(errno));
  }
  cg->path_ = path;  // removed by the destructor from here on
  if (memory_bytes > 0) {
    DICE_RETURN_IF_ERROR(write_text(path + "/memory.max", std::to_string(memory_bytes)));
    // Absent without swap accounting: then there is no swap to limit.
    if (access((path + "/memory.swap.max").c_str(), F_OK) == 0) {
      DICE_RETURN_IF_ERROR(write_text(path + "/memory.swap.max", "0"));
    }
  }
  if (max_pids > 0) {
    DICE_RETURN_IF_ERROR(write_text(path + "/pids.max", std::to_string(max_pids)));
  }
  cg->procs_fd_ = open((path + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (cg->procs_fd_ < 0) {
    return Status::unavailable("cgroup: cannot open " + path + "/cgroup.procs: " + strerror(errno));
  }
  return cg;
}

RunCgroup::~RunCgroup() {
  if (procs_fd_ >= 0) close(procs_fd_);
  if (path_.empty()) return;
  // The run's tasks are gone once its init is reaped (the kernel reaps a PID namespace before its
  // init's exit completes); their cgroup references may lag a moment behind.
  for (int attempt = 0; attempt < 50; ++attempt) {
    if (rmdir(path_.c_str()) == 0 || errno != EBUSY) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace dice
