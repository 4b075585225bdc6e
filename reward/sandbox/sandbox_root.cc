#include "reward/sandbox/sandbox_root.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "common/json/fields.h"
#include "reward/sandbox/sandbox.h"

namespace dice {

namespace fs = std::filesystem;

struct SandboxRoot::Op {
  enum Kind {
    kMakePrivate,      // mount propagation private, so nothing reaches the worker's mounts
    kTmpfs,            // tmpfs at target, options in source
    kMkdir,            // directory target (mode)
    kSymlink,          // symlink target -> source
    kWriteFile,        // file target with contents source (mode)
    kCreateFile,       // empty file target: where a file is bound
    kBindReadOnly,     // source at target, read-only, nosuid, nodev, with its submounts
    kBindNode,         // device node source at target: read-only mount, nosuid, noexec
    kBindWritable,     // source at target, read-write, nosuid, nodev
    kProc,             // proc of the caller's PID namespace at target
    kSysfs,            // sysfs at target, read-only (the host's /sys bound where not allowed)
    kPivotIntoBase,    // "/" = the staging tmpfs on /tmp; the host's root at /oldroot
    kPivotIntoRoot,    // "/" = /newroot; the staging tmpfs and the host's root detached
    kRemountReadOnly,  // the mount at target read-only (the new root, a pruned directory)
  };
  Kind kind;
  std::string target;
  std::string source;
  unsigned mode = 0;
  std::string what;  // for describe_step
};

namespace {

using Op = SandboxRoot::Op;

// Where the staging tmpfs keeps the host's root and the new root, between the two pivots.
constexpr char kOldRoot[] = "/oldroot";
constexpr char kNewRoot[] = "/newroot";
// The empty file bound over each of RootRequest::masked_files, on the staging tmpfs (the binds
// keep it after the staging tmpfs is detached).
constexpr char kMaskFile[] = "/masked-empty";
// Options of the tmpfs over each of RootRequest::pruned_dirs (/proc/driver/nvidia's copies take
// a few KiB).
constexpr char kPrunedTmpfs[] = "size=1m,mode=0755";

// What every run gets from the host's top level: directories bound read-only, symlinks (merged
// /usr) recreated.
constexpr const char* kSystemPaths[] = {"/usr",   "/bin",   "/sbin",  "/lib",
                                        "/lib32", "/lib64", "/libx32"};

// Host files of /etc that programs read and that say nothing about the host: the dynamic
// linker's cache, and the alternatives symlinks Debian's cc, c++ and CUDA go through.
constexpr const char* kHostEtc[] = {"/etc/ld.so.cache", "/etc/alternatives"};

// Device nodes of every run, and of runs with a GPU (besides /dev/nvidia<N>).
constexpr const char* kDevNodes[] = {"null", "zero", "full", "random", "urandom"};
constexpr const char* kGpuNodesRequired[] = {"nvidiactl"};
constexpr const char* kGpuNodesOptional[] = {"nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"};

// Directories the root makes itself: nothing from the host is bound inside /proc or /sys.
constexpr const char* kSynthetic[] = {"/proc", "/sys"};

bool is_under(const std::string& path, const std::string& prefix) {
  if (prefix == "/") return true;
  return path == prefix ||
         (path.size() > prefix.size() && path.compare(0, prefix.size(), prefix) == 0 &&
          path[prefix.size()] == '/');
}

// Binds `source` at `target`, read-only with `attrs` (MOUNT_ATTR_*), submounts included when
// `recursive`. Through open_tree + mount_setattr (Linux 5.12), which make every submount
// read-only too; before that kernel (ENOSYS), or where a container's own seccomp profile does not
// know these calls (EPERM), the classic bind and remount: read-only at the top, the submounts
// (driver libraries a container runtime bound in) as the host has them, their files still
// root's.
int bind_read_only(const char* source, const char* target, bool recursive, std::uint64_t attrs,
                   unsigned long ms_flags) {
  const unsigned tree_flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0);
  const int fd = static_cast<int>(syscall(SYS_open_tree, AT_FDCWD, source, tree_flags));
  if (fd < 0) {
    if (errno != ENOSYS && errno != EPERM) return -1;
    if (mount(source, target, nullptr, MS_BIND | (recursive ? MS_REC : 0), nullptr) != 0) return -1;
    return mount(nullptr, target, nullptr, MS_REMOUNT | MS_BIND | ms_flags, nullptr);
  }
  mount_attr attr{};
  attr.attr_set = attrs;
  int rc = static_cast<int>(syscall(SYS_mount_setattr, fd, "",
                                    AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                                    sizeof(attr)));
  if (rc == 0) {
    rc = static_cast<int>(
        syscall(SYS_move_mount, fd, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH));
  }
  const int err = errno;
  close(fd);
  errno = err;
  return rc;
}

int write_all(const char* path, const std::string& contents, unsigned mode) {
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  size_t done = 0;
  while (done < contents.size()) {
    const ssize_t n = write(fd, contents.data() + done, contents.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      errno = err;
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return close(fd);
}

int run_op(const Op& op) {
  const char* t = op.target.c_str();
  const char* s = op.source.c_str();
  switch (op.kind) {
    case Op::kMakePrivate:
      return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
    case Op::kTmpfs:
      return mount("tmpfs", t, "tmpfs", MS_NOSUID | MS_NODEV, s);
    case Op::kMkdir:
      if (mkdir(t, op.mode) == 0 || errno == EEXIST) return 0;
      return -1;
    case Op::kSymlink:
      return symlink(s, t);
    case Op::kWriteFile:
      return write_all(t, op.source, op.mode);
    case Op::kCreateFile: {
      const int fd = open(t, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
      return fd < 0 ? -1 : close(fd);
    }
    case Op::kBindReadOnly:
      return bind_read_only(s, t, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                            MS_RDONLY | MS_NOSUID | MS_NODEV);
    case Op::kBindNode:
      return bind_read_only(s, t, false, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC,
                            MS_RDONLY | MS_NOSUID | MS_NOEXEC);
    case Op::kBindWritable:
      if (mount(s, t, nullptr, MS_BIND, nullptr) != 0) return -1;
      return mount(nullptr, t, nullptr, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV, nullptr);
    case Op::kProc:
      return mount("proc", t, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
    case Op::kSysfs:
      if (mount("sysfs", t, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
        return 0;
      }
      return bind_read_only(
          s, t, true, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC,
          MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
    case Op::kPivotIntoBase:
      if (syscall(SYS_pivot_root, "/tmp", "/tmp/oldroot") != 0) return -1;
      return chdir("/");
    case Op::kPivotIntoRoot:
      // pivot_root(".", "."): the old root ends up on top of the new one, and the detach takes
      // it (with the host's root under it) away from this namespace.
      if (chdir(kNewRoot) != 0 || syscall(SYS_pivot_root, ".", ".") != 0) return -1;
      if (umount2(".", MNT_DETACH) != 0) return -1;
      return chdir("/");
    case Op::kRemountReadOnly:
      return mount(nullptr, t, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV,
                   nullptr);
  }
  errno = EINVAL;
  return -1;
}

// Where the child finds host path `path` between the pivots: under /oldroot, with every symlink
// resolved here first (an absolute link, /opt/x -> /data/x, would resolve against the staging
// root there).
std::string host_source(const std::string& path) {
  char real[PATH_MAX];
  return kOldRoot + std::string(realpath(path.c_str(), real) != nullptr ? real : path.c_str());
}

std::string normal(const std::string& path) {
  std::string p = fs::path(path).lexically_normal().string();
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

class SandboxRoot::Planner {
 public:
  explicit Planner(std::vector<Op>* ops) : ops_(ops) {}

  void add(Op::Kind kind, const std::string& target, std::string source = "", unsigned mode = 0,
           std::string what = "") {
    ops_->push_back(Op{kind, target, std::move(source), mode, std::move(what)});
  }
  // An op on the new root: `path` as the run will see it.
  void add_in_root(Op::Kind kind, const std::string& path, std::string source = "",
                   unsigned mode = 0, std::string what = "") {
    add(kind, kNewRoot + path, std::move(source), mode, what.empty() ? path : what);
  }
  void mkdirs(const std::string& path, unsigned mode = 0755) {
    fs::path so_far;
    for (const auto& part : fs::path(path)) {
      so_far /= part;
      const std::string dir = so_far.string();
      if (dir == "/" || !made_.insert(dir).second) continue;
      add_in_root(Op::kMkdir, dir, "", mode, "make " + dir);
    }
  }
  void covers(const std::string& path) { prefixes_.push_back(path); }
  bool covered(const std::string& path) const {
    return std::any_of(prefixes_.begin(), prefixes_.end(),
                       [&](const std::string& p) { return is_under(path, p); });
  }

  // `path` read-only at its own path, unless already in the root.
  Status bind(const std::string& raw, bool required) {
    auto skip_or = [&](const std::string& why) {
      return required ? Status::unavailable("root: " + raw + " " + why) : Status::ok_status();
    };
    if (raw.empty() || raw[0] != '/') return skip_or("is not an absolute path");
    const std::string path = normal(raw);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return skip_or("does not exist");
    for (const char* synthetic : kSynthetic) {
      if (is_under(path, synthetic)) return skip_or("is inside a directory the sandbox makes");
    }
    if (path == "/") return skip_or("is the host's whole root");
    if (covered(path)) return Status::ok_status();
    const bool dir = S_ISDIR(st.st_mode);
    mkdirs(dir ? path : fs::path(path).parent_path().string());
    if (!dir) add_in_root(Op::kCreateFile, path, "", 0, "make " + path);
    add_in_root(Op::kBindReadOnly, path, host_source(path), 0, "bind " + path + " read-only");
    if (dir) covers(path);
    char real[PATH_MAX];
    if (realpath(path.c_str(), real) != nullptr && path != real && !covered(real)) {
      return bind(real, required);
    }
    return Status::ok_status();
  }

  // The parts of the root, each a stretch of plan() (which says in what order).
  // The host's top-level system folders: bound read-only, merged-usr symlinks recreated.
  Status plan_system_paths() {
    for (const char* sys : kSystemPaths) {
      struct stat st;
      if (lstat(sys, &st) != 0) continue;
      if (S_ISLNK(st.st_mode)) {
        std::error_code ec;
        const std::string to = fs::read_symlink(sys, ec).string();
        if (ec) return Status::unavailable(std::string("root: cannot read the symlink ") + sys);
        add_in_root(Op::kSymlink, sys, to, 0, std::string("link ") + sys + " -> " + to);
        covers(sys);
      } else {
        DICE_RETURN_IF_ERROR(bind(sys, true));
      }
    }
    return Status::ok_status();
  }

  Status plan_etc(const RootRequest& request) {
    // /etc: the run's own user, no host account.
    const int uid = request.uid < 0 ? 0 : request.uid;
    const int gid = request.gid < 0 ? 0 : request.gid;
    const std::string user = uid == 0 ? "root" : request.user_name;
    const std::string group = gid == 0 ? "root" : request.user_name;
    mkdirs("/etc");
    add_in_root(Op::kWriteFile, "/etc/passwd",
                user + ":x:" + std::to_string(uid) + ":" + std::to_string(gid) +
                    ":dice sandbox:" + request.scratch +
                    ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
                0644);
    add_in_root(Op::kWriteFile, "/etc/group",
                group + ":x:" + std::to_string(gid) + ":\nnogroup:x:65534:\n", 0644);
    add_in_root(Op::kWriteFile, "/etc/hosts",
                std::string("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost\n127.0.1.1\t") +
                    kSandboxHostname + "\n",
                0644);
    add_in_root(Op::kWriteFile, "/etc/nsswitch.conf",
                "passwd: files\ngroup: files\nshadow: files\nhosts: files\n", 0644);
    add_in_root(Op::kWriteFile, "/etc/hostname", std::string(kSandboxHostname) + "\n", 0644);
    add_in_root(Op::kSymlink, "/etc/mtab", "/proc/self/mounts", 0, "link /etc/mtab");
    for (const char* etc : kHostEtc) DICE_RETURN_IF_ERROR(bind(etc, false));
    return Status::ok_status();
  }

  // /dev's tmpfs with the host's nodes the run gets, and the fd links.
  Status plan_dev(const RootRequest& request) {
    mkdirs("/dev");
    add_in_root(Op::kTmpfs, "/dev", "size=64k,mode=0755", 0, "mount /dev's tmpfs");
    for (const char* name : kDevNodes) DICE_RETURN_IF_ERROR(node(name, true));
    if (!request.gpu_devices.empty()) {
      for (const char* name : kGpuNodesRequired) DICE_RETURN_IF_ERROR(node(name, true));
      for (const char* name : kGpuNodesOptional) DICE_RETURN_IF_ERROR(node(name, false));
      for (int gpu : request.gpu_devices) {
        DICE_RETURN_IF_ERROR(node("nvidia" + std::to_string(gpu_device_minor(gpu)), true));
      }
    }
    add_in_root(Op::kSymlink, "/dev/fd", "/proc/self/fd", 0, "link /dev/fd");
    int fd = 0;
    for (const char* name : {"stdin", "stdout", "stderr"}) {
      add_in_root(Op::kSymlink, std::string("/dev/") + name,
                  "/proc/self/fd/" + std::to_string(fd++), 0, std::string("link /dev/") + name);
    }
    return Status::ok_status();
  }

  // The run's scratch directory, read-write at its host path.
  Status plan_scratch(const RootRequest& request) {
    const std::string scratch = normal(request.scratch);
    if (scratch.empty() || scratch[0] != '/' || scratch == "/") {
      return Status::unavailable("root: the scratch directory \"" + request.scratch +
                                 "\" is not an absolute path below /");
    }
    mkdirs(scratch);
    add_in_root(Op::kBindWritable, scratch, host_source(scratch), 0,
                "bind the scratch directory " + scratch + " read-write");
    covers(scratch);
    return Status::ok_status();
  }

  // RootRequest::required_paths and optional_paths.
  Status plan_requested_paths(const RootRequest& request) {
    // Parents before children: a folder bound first covers what lies in it.
    std::vector<std::pair<std::string, bool>> wanted;
    for (const auto& path : request.required_paths) wanted.emplace_back(normal(path), true);
    for (const auto& path : request.optional_paths) {
      if (!path.empty() && path[0] == '/') wanted.emplace_back(normal(path), false);
    }
    std::sort(wanted.begin(), wanted.end());
    for (const auto& [path, required] : wanted) DICE_RETURN_IF_ERROR(bind(path, required));
    return Status::ok_status();
  }

  // RootRequest::pruned_dirs, after every bind (a pruned directory lies in one, or in /proc).
  void plan_pruned_dirs(const RootRequest& request) {
    for (const auto& pruned : request.pruned_dirs) {
      char real[PATH_MAX];
      struct stat st;
      if (pruned.path.empty() || pruned.path[0] != '/' ||
          realpath(pruned.path.c_str(), real) == nullptr || stat(real, &st) != 0 ||
          !S_ISDIR(st.st_mode)) {
        continue;
      }
      const std::string dir = real;
      if (!((is_under(dir, "/proc") && dir != "/proc") || covered(dir))) continue;
      add_in_root(Op::kTmpfs, dir, kPrunedTmpfs, 0, "mount a tmpfs over " + dir);
      for (const auto& [name, contents] : pruned.files) {
        if (name.empty() || name.find('/') != std::string::npos || name == "..") continue;
        add_in_root(Op::kWriteFile, dir + "/" + name, contents, 0444, "write " + dir + "/" + name);
      }
      for (const auto& relative : pruned.bound) {
        const fs::path inside = fs::path(relative).lexically_normal();
        const std::string host = dir + "/" + inside.string();
        if (inside.empty() || inside.is_absolute() || *inside.begin() == ".." ||
            stat(host.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
          continue;
        }
        fs::path so_far = dir;
        for (const auto& part : inside) {
          so_far /= part;
          add_in_root(Op::kMkdir, so_far.string(), "", 0755, "make " + so_far.string());
        }
        add_in_root(Op::kBindReadOnly, host, host_source(host), 0, "bind " + host + " read-only");
      }
      add_in_root(Op::kRemountReadOnly, dir, "", 0, "remount " + dir + " read-only");
    }
  }

  // RootRequest::masked_files, after every bind and pruned directory (what they bind is what a
  // mask covers).
  void plan_masked_files(const RootRequest& request) {
    std::set<std::string> masked;
    for (const auto& path : request.masked_files) {
      char real[PATH_MAX];
      struct stat st;
      if (path.empty() || path[0] != '/' || realpath(path.c_str(), real) == nullptr ||
          stat(real, &st) != 0 || !S_ISREG(st.st_mode) || !covered(real) ||
          !masked.insert(real).second) {
        continue;
      }
      if (masked.size() == 1) add(Op::kCreateFile, kMaskFile, "", 0, "make the masks' empty file");
      add_in_root(Op::kBindReadOnly, real, kMaskFile, 0, std::string("mask ") + real);
    }
  }

 private:
  // Host device node /dev/`name` at its own path in the root.
  Status node(const std::string& name, bool required) {
    const std::string path = "/dev/" + name;
    struct stat st;
    if (stat(path.c_str(), &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
      return required ? Status::unavailable("root: device node " + path + " does not exist")
                      : Status::ok_status();
    }
    add_in_root(Op::kCreateFile, path, "", 0, "make " + path);
    add_in_root(Op::kBindNode, path, host_source(path), 0, "bind " + path);
    return Status::ok_status();
  }

  std::vector<Op>* ops_;
  std::set<std::string> made_;
  std::vector<std::string> prefixes_;
};

SandboxRoot::SandboxRoot() = default;
SandboxRoot::~SandboxRoot() = default;

Result<std::unique_ptr<SandboxRoot>> SandboxRoot::plan(const RootRequest& request) {
  std::unique_ptr<SandboxRoot> root(new SandboxRoot());
  Planner p(&root->ops_);
  p.add(Op::kMakePrivate, "/", "", 0, "make the mount namespace private");
  p.add(Op::kTmpfs, "/tmp", "size=64k,mode=0700", 0, "mount the staging tmpfs");
  p.add(Op::kMkdir, "/tmp/oldroot", "", 0700, "make the staging directories");
  p.add(Op::kMkdir, std::string("/tmp") + kNewRoot, "", 0700, "make the staging directories");
  p.add(Op::kPivotIntoBase, "/", "", 0, "pivot_root into the staging tmpfs");
  p.add(Op::kTmpfs, kNewRoot, "size=16m,mode=0755", 0, "mount the new root's tmpfs");

  DICE_RETURN_IF_ERROR(p.plan_system_paths());
  DICE_RETURN_IF_ERROR(p.plan_etc(request));

  p.mkdirs("/proc");
  p.add_in_root(Op::kProc, "/proc", "", 0, "mount /proc of the PID namespace");
  p.mkdirs("/sys");
  p.add_in_root(Op::kSysfs, "/sys", std::string(kOldRoot) + "/sys", 0, "mount /sys read-only");

  DICE_RETURN_IF_ERROR(p.plan_dev(request));
  const std::string tmpfs_options = "size=" + std::to_string(request.tmpfs_size_mb) + "m,mode=1777";
  p.mkdirs("/dev/shm");
  p.add_in_root(Op::kTmpfs, "/dev/shm", tmpfs_options, 0, "mount /dev/shm");
  p.mkdirs("/tmp");
  p.add_in_root(Op::kTmpfs, "/tmp", tmpfs_options, 0, "mount /tmp");

  DICE_RETURN_IF_ERROR(p.plan_scratch(request));
  DICE_RETURN_IF_ERROR(p.plan_requested_paths(request));
  p.plan_pruned_dirs(request);
  p.plan_masked_files(request);

  p.add(Op::kPivotIntoRoot, "/", "", 0, "pivot_root into the new root");
  p.add(Op::kRemountReadOnly, "/", "", 0, "remount the new root read-only");
  return root;
}

int SandboxRoot::enter(int* failed_step) const {
  for (size_t i = 0; i < ops_.size(); ++i) {
    if (run_op(ops_[i]) != 0) {
      *failed_step = static_cast<int>(i);
      return -1;
    }
  }
  return 0;
}

std::string SandboxRoot::describe_step(int step) const {
  if (step < 0 || static_cast<size_t>(step) >= ops_.size()) return "step " + std::to_string(step);
  return ops_[static_cast<size_t>(step)].what;
}

std::vector<std::string> python_import_paths(const std::string& python) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(python);
    if (it != cache.end()) return it->second;
  }
  // The worker's own probe of a trusted interpreter: no namespaces, no uid switch (a second probe
  // of the same interpreter by a concurrent run gives the same answer).
  SandboxSpec spec;
  spec.argv = {python, "-E", "-s", "-c",
               "import json, sys\n"
               "print(json.dumps({'paths': [sys.prefix, sys.base_prefix, sys.exec_prefix,\n"
               "    sys.base_exec_prefix] + sys.path}))\n"};
  spec.isolate = false;
  spec.uid = spec.gid = -1;
  spec.timeout_seconds = 60;
  spec.memory_limit_mb = 0;
  std::vector<std::string> paths;
  auto run = run_sandboxed(spec);
  if (run.ok() && run->succeeded()) {
    auto doc = parse_json(run->stdout_text, "python import paths");
    if (doc.ok()) paths = json_strings(doc.value(), "paths");
  }
  std::lock_guard<std::mutex> lock(mutex);
  cache[python] = paths;
  return paths;
}

int gpu_device_minor(int ordinal) {
  const std::string gpus = std::string(kNvidiaProcDir) + "/gpus";
  const std::vector<std::string> buses = nvidia_gpu_buses(gpus);
  if (ordinal < 0 || static_cast<size_t>(ordinal) >= buses.size()) return ordinal;
  std::ifstream info(gpus + "/" + buses[static_cast<size_t>(ordinal)] + "/information");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("Device Minor:", 0) == 0) return std::atoi(line.c_str() + 13);
  }
  return ordinal;
}

}  // namespace dice
