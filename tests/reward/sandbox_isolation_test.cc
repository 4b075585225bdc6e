// The sandbox's isolation, checked from outside: each test runs a real child that tries one of
// the escapes candidates used against the earlier sandbox, then looks at the host (its files,
// sockets, IPC namespace, the child's /proc entry as the host sees it) instead of trusting what
// the child says. Also: a layer that cannot be set up means the command does not run.
#include <fcntl.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "reward/run_failure.h"
#include "reward/sandbox/sandbox.h"
#include "reward/sandbox/sandbox_cgroup.h"

#include "common/remove_tree.h"
#include "tests/reward/sandbox_test_util.h"

#include <gtest/gtest.h>

namespace dice {
namespace {

namespace fs = std::filesystem;
using FC = schema::FailureClass;

using sandbox_test::kPython;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using sandbox_test::python_spec;
using sandbox_test::run_ok;

// A host directory of the test's own, removed at the end.
struct HostDir {
  HostDir() {
    std::string templ = "/tmp/dice-isolation-XXXXXX";
    EXPECT_NE(mkdtemp(templ.data()), nullptr);
    path = templ;
    chmod(path.c_str(), 0777);  // as reachable as a host folder can be
  }
  ~HostDir() { remove_tree(path).ignore(); }
  std::string path;
};

// The host pid of the process whose argv has `marker` as an element (the sandboxed command, as
// the host sees it), or -1.
pid_t host_pid_of(const std::string& marker) {
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmdline = read_text(entry.path() / "cmdline");
    size_t start = 0;
    while (start < cmdline.size()) {
      const size_t end = cmdline.find('\0', start);
      if (cmdline.compare(start, (end == std::string::npos ? cmdline.size() : end) - start,
                          marker) == 0) {
        return static_cast<pid_t>(std::stol(name));
      }
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return -1;
}

// The value of `field` ("NoNewPrivs:") in /proc/<pid>/status, read by the host.
std::string status_field(pid_t pid, const std::string& field) {
  std::istringstream status(read_text("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind(field, 0) == 0) {
      const size_t value = line.find_first_not_of(" \t", field.size());
      return value == std::string::npos ? "" : line.substr(value);
    }
  }
  return "<no " + field + ">";
}

std::string ns_of(const std::string& pid, const std::string& ns) {
  std::error_code ec;
  return fs::read_symlink("/proc/" + pid + "/ns/" + ns, ec).string();
}

// A sandboxed python that prints READY, then waits for a line on stdin: while it waits, the test
// looks at it from the host.
class Waiting {
 public:
  Waiting(const std::string& code, const std::string& marker) {
    SandboxSpec spec = python_spec(code +
                                   "\nprint('READY', flush=True)\nimport sys\n"
                                   "sys.stdin.readline()\n");
    spec.argv.push_back(marker);
    spec.input_pipe = true;
    auto started = SandboxProcess::start(spec);
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    if (!started.ok()) return;
    process = std::move(started).value();
    Status ready = process->wait_for_line("READY", 30);
    EXPECT_TRUE(ready.ok()) << ready.to_string();
    if (ready.ok()) pid = host_pid_of(marker);
  }
  SandboxResult finish() {
    EXPECT_TRUE(process->send_input("\n").ok());
    return process->wait(30);
  }
  std::unique_ptr<SandboxProcess> process;
  pid_t pid = -1;
};

#define SKIP_UNLESS_ROOT() \
  if (geteuid() != 0) GTEST_SKIP() << "the isolated sandbox needs root"

TEST(SandboxIsolationTest, FilesWrittenOutsideScratchDoNotReachTheHost) {
  SKIP_UNLESS_ROOT();
  HostDir shared;
  const std::string name = "dice-escape-" + std::to_string(getpid());
  const std::vector<std::string> targets = {"/run/lock/" + name, "/var/tmp/" + name, "/tmp/" + name,
                                            "/dev/shm/" + name, shared.path + "/" + name};
  std::string code = "import os\nfor path in [";
  for (const auto& t : targets) code += "'" + t + "', ";
  code +=
      "]:\n"
      "    try:\n"
      "        open(path, 'w').write('x'); print('wrote', path)\n"
      "    except OSError as e:\n"
      "        print('refused', path, e)\n"
      "print('run', os.path.exists('/run'), 'var', os.path.exists('/var'))\n";
  SandboxResult r = run_ok(python_spec(code));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("run False var False"), std::string::npos) << r.stdout_text;
  for (const auto& t : targets) EXPECT_FALSE(fs::exists(t)) << t << " reached the host";
}

TEST(SandboxIsolationTest, HostUnixSocketsAreOutOfReach) {
  SKIP_UNLESS_ROOT();
  HostDir dir;
  const std::string path = dir.path + "/host.sock";
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(chmod(path.c_str(), 0777), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  // And one in the abstract namespace, which has no path to hide: the network namespace does.
  const int abstract = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  sockaddr_un abstract_addr{};
  abstract_addr.sun_family = AF_UNIX;
  const std::string abstract_name = "dice-isolation-" + std::to_string(getpid());
  std::memcpy(abstract_addr.sun_path + 1, abstract_name.data(), abstract_name.size());
  const socklen_t abstract_len =
      static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + abstract_name.size());
  ASSERT_EQ(bind(abstract, reinterpret_cast<sockaddr*>(&abstract_addr), abstract_len), 0);
  ASSERT_EQ(listen(abstract, 8), 0);

  SandboxResult r =
      run_ok(python_spec("import os, socket\n"
                         "print('visible', os.path.exists('" +
                         path +
                         "'))\n"
                         "for where in ['" +
                         path + "', '\\0" + abstract_name +
                         "']:\n"
                         "    s = socket.socket(socket.AF_UNIX)\n"
                         "    try:\n"
                         "        s.connect(where); s.sendall(b'escaped'); print('sent')\n"
                         "    except OSError as e:\n"
                         "        print('refused', e)\n"));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("visible False"), std::string::npos) << r.stdout_text;
  EXPECT_EQ(r.stdout_text.find("sent"), std::string::npos) << r.stdout_text;
  for (int fd : {listener, abstract}) {
    EXPECT_LT(accept(fd, nullptr, nullptr), 0) << "the host socket was reached";
    EXPECT_EQ(errno, EAGAIN);
    close(fd);
  }
}

// Whether the host's IPC namespace (this process's) has a System V segment with `key`.
bool host_has_shm_key(int key) {
  if (shmget(key, 0, 0) >= 0) return true;
  std::istringstream table(read_text("/proc/sysvipc/shm"));
  std::string line;
  std::getline(table, line);  // header
  while (std::getline(table, line)) {
    std::istringstream fields(line);
    long long k = 0;
    if (fields >> k && k == key) return true;
  }
  return false;
}

TEST(SandboxIsolationTest, SysvSharedMemoryStaysInTheRunsIpcNamespace) {
  SKIP_UNLESS_ROOT();
  const int key = 0x0D1CE000 + (getpid() & 0xfff);
  ASSERT_FALSE(host_has_shm_key(key));
  const std::string marker = "dice-shm-" + std::to_string(getpid());
  Waiting w(
      "import ctypes\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "shm = libc.shmget(" +
          std::to_string(key) +
          ", 4096, 0o1666)\n"  // IPC_CREAT | 0666
          "assert shm >= 0, ctypes.get_errno()\n",
      marker);
  ASSERT_NE(w.process, nullptr);
  ASSERT_GT(w.pid, 0);
  // While it lives: in the run's namespace, not the host's.
  EXPECT_NE(ns_of(std::to_string(w.pid), "ipc"), ns_of("self", "ipc"));
  EXPECT_FALSE(host_has_shm_key(key)) << "the segment is in the host's IPC namespace";
  SandboxResult r = w.finish();
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_FALSE(host_has_shm_key(key)) << "the segment outlived the run in the host";
}

TEST(SandboxIsolationTest, TheHostSeesNamespacesNoNewPrivsSeccompAndNoCapabilities) {
  SKIP_UNLESS_ROOT();
  const std::string marker = "dice-layers-" + std::to_string(getpid());
  Waiting w("", marker);
  ASSERT_NE(w.process, nullptr);
  ASSERT_GT(w.pid, 0) << "the command is not visible from the host";
  const std::string pid = std::to_string(w.pid);
  for (const char* ns : {"user", "mnt", "pid", "ipc", "uts", "net"}) {
    EXPECT_NE(ns_of(pid, ns), ns_of("self", ns)) << ns;
  }
  EXPECT_EQ(status_field(w.pid, "NoNewPrivs:"), "1");
  EXPECT_EQ(status_field(w.pid, "Seccomp:"), "2");
  for (const char* caps : {"CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"}) {
    EXPECT_EQ(status_field(w.pid, caps), "0000000000000000") << caps;
  }
  // The run's uid outside and inside, mapped to itself alone; groups: none.
  const std::string uid_map = read_text("/proc/" + pid + "/uid_map");
  const int uid = std::stoi(status_field(w.pid, "Uid:"));
  EXPECT_GE(uid, kSandboxUidBase);
  std::istringstream map(uid_map);
  long inside = -1, outside = -1, count = -1;
  map >> inside >> outside >> count;
  EXPECT_EQ(inside, uid);
  EXPECT_EQ(outside, uid);
  EXPECT_EQ(count, 1) << uid_map;
  EXPECT_EQ(read_text("/proc/" + pid + "/setgroups"), "deny\n");
  EXPECT_EQ(status_field(w.pid, "Groups:"), "");
  SandboxResult r = w.finish();
  EXPECT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_TRUE(r.isolated);
  EXPECT_TRUE(r.private_root);
  EXPECT_TRUE(r.seccomp);
}

TEST(SandboxIsolationTest, NewNamespacesMountsAndPtraceAreRefused) {
  SKIP_UNLESS_ROOT();
  const std::string marker = "dice-unshare-" + std::to_string(getpid());
  Waiting w(
      "import ctypes, os, subprocess, threading\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "def errno_of(rc):\n"
      "    return 0 if rc == 0 else ctypes.get_errno()\n"
      "CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET = 0x10000000, 0x20000, 0x40000000\n"
      "print('unshare-user', errno_of(libc.unshare(CLONE_NEWUSER)))\n"
      "print('unshare-mnt', errno_of(libc.unshare(CLONE_NEWNS)))\n"
      "print('clone-net', errno_of(libc.syscall(56, CLONE_NEWNET | 17, 0, 0, 0, 0))\n"
      "    if os.uname().machine == 'x86_64' else 'clone-net 1')\n"
      "print('mount', errno_of(libc.mount(b'none', b'/tmp', b'tmpfs', 0, None)))\n"
      "print('ptrace', errno_of(libc.ptrace(16, 1, 0, 0)))\n"  // PTRACE_ATTACH to the init
      "print('keyctl', errno_of(libc.syscall(250 if os.uname().machine == 'x86_64' else 219,\n"
      "    0, 0, 0, 0, 0)))\n"
      // Still works: threads, and starting programs (clone3 answers ENOSYS, glibc uses clone).
      "t = threading.Thread(target=lambda: None); t.start(); t.join()\n"
      "print('subprocess', subprocess.run(['/bin/sh', '-c', 'exit 7']).returncode)\n",
      marker);
  ASSERT_NE(w.process, nullptr);
  ASSERT_GT(w.pid, 0);
  const std::string user_ns = ns_of(std::to_string(w.pid), "user");
  const std::string mnt_ns = ns_of(std::to_string(w.pid), "mnt");
  SandboxResult r = w.finish();
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  for (const char* line : {"unshare-user 1\n", "unshare-mnt 1\n", "clone-net 1\n", "mount 1\n",
                           "ptrace 1\n", "keyctl 1\n", "subprocess 7\n"}) {
    EXPECT_NE(r.stdout_text.find(line), std::string::npos) << line << r.stdout_text;
  }
  // The host saw no namespace change: the process kept the ones it started with.
  EXPECT_NE(user_ns, ns_of("self", "user"));
  EXPECT_NE(mnt_ns, ns_of("self", "mnt"));
}

// Issue 49: AF_VSOCK sockets could be made (they reach the host past the network namespace), and
// pidfd_getfd and memfd_secret were not refused. Socket families are an allow-list (local,
// internet, netlink), and the calls that reach into another process or hide memory are refused
// with their siblings; what candidates use (local and internet sockets, socketpair, memfds) still
// works.
TEST(SandboxIsolationTest, OtherProcessesHiddenMemoryAndRareSocketFamiliesAreRefused) {
  SKIP_UNLESS_ROOT();
  SandboxResult r = run_ok(python_spec(
      "import ctypes, os\n"
      "libc = ctypes.CDLL(None, use_errno=True)\n"
      "libc.syscall.restype = ctypes.c_long\n"
      "def errno_of(rc):\n"
      "    return 0 if rc >= 0 else ctypes.get_errno()\n"
      "x86 = os.uname().machine == 'x86_64'\n"
      "families = {'vsock': 40, 'bluetooth': 31, 'alg': 38, 'packet': 17, 'key': 15,\n"
      "            'xdp': 44, 'rds': 21, 'tipc': 30, 'can': 29, 'unknown': 200}\n"
      "for name, family in families.items():\n"
      "    print('socket', name, errno_of(libc.socket(family, 1, 0)))\n"
      "    print('socket', name, 'raw', errno_of(libc.socket(family, 3, 0)))\n"
      "    pair = (ctypes.c_int * 2)()\n"
      "    print('socketpair', name, errno_of(libc.socketpair(family, 1, 0, pair)))\n"
      // Invalid descriptors: unfiltered, each answers EBADF or EINVAL, never EPERM.
      "calls = {'pidfd_getfd': (438, -1, 0, 0), 'process_madvise': (440, -1, 0, 0, 0, 0),\n"
      "         'process_mrelease': (448, -1, 0), 'memfd_secret': (447, 0),\n"
      "         'quotactl_fd': (443, -1, 0, 0, 0),\n"
      "         'kcmp': (312 if x86 else 272, 1, 1, 0, 0, 0)}\n"
      "for name, call in calls.items():\n"
      "    print('call', name, errno_of(libc.syscall(*call)))\n"
      "print('allowed unix', errno_of(libc.socket(1, 1, 0)))\n"
      "print('allowed inet', errno_of(libc.socket(2, 2, 0)))\n"
      "print('allowed inet6', errno_of(libc.socket(10, 2, 0)))\n"
      "pair = (ctypes.c_int * 2)()\n"
      "print('allowed socketpair', errno_of(libc.socketpair(1, 5, 0, pair)))\n"
      "print('allowed memfd', errno_of(os.memfd_create('x')))\n"));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  for (const char* family :
       {"vsock", "bluetooth", "alg", "packet", "key", "xdp", "rds", "tipc", "can", "unknown"}) {
    for (const std::string& how :
         {"socket " + std::string(family) + " 1\n", "socket " + std::string(family) + " raw 1\n",
          "socketpair " + std::string(family) + " 1\n"}) {
      EXPECT_NE(r.stdout_text.find(how), std::string::npos) << how << r.stdout_text;
    }
  }
  for (const char* call : {"pidfd_getfd", "process_madvise", "process_mrelease", "memfd_secret",
                           "quotactl_fd", "kcmp"}) {
    EXPECT_NE(r.stdout_text.find("call " + std::string(call) + " 1\n"), std::string::npos)
        << call << "\n"
        << r.stdout_text;
  }
  for (const char* allowed : {"allowed unix 0\n", "allowed inet 0\n", "allowed inet6 0\n",
                              "allowed socketpair 0\n", "allowed memfd 0\n"}) {
    EXPECT_NE(r.stdout_text.find(allowed), std::string::npos) << allowed << r.stdout_text;
  }
}

TEST(SandboxIsolationTest, HostFilesAreNotInTheRoot) {
  SKIP_UNLESS_ROOT();
  // A stand-in for the compile cache: another candidate's source, world-readable.
  HostDir cache;
  const std::string secret = cache.path + "/other_candidate.cu";
  std::ofstream(secret) << "secret source";
  chmod(secret.c_str(), 0644);
  SandboxResult r = run_ok(python_spec(
      "import os, socket\n"
      "print(open('/etc/passwd').read(), end='')\n"
      "print('HOSTNAME', socket.gethostname())\n"
      "for path in ['/home', '/var', '/run', '/root', '/srv', '/mnt', '/media', '/opt', '" +
      cache.path + "', '" + secret +
      "']:\n"
      "    print('PRESENT' if os.path.exists(path) else 'absent', path)\n"
      "print('DEV', sorted(os.listdir('/dev')))\n"));
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.find("PRESENT"), std::string::npos) << r.stdout_text;
  // /etc/passwd: the run's user, nothing of the host's.
  const std::string host_passwd = read_text("/etc/passwd");
  std::istringstream host_lines(host_passwd);
  for (std::string line; std::getline(host_lines, line);) {
    if (line.rfind("nobody:", 0) == 0 || line.empty()) continue;
    EXPECT_EQ(r.stdout_text.find(line), std::string::npos) << "host passwd line: " << line;
  }
  EXPECT_NE(r.stdout_text.find("dice-sandbox:x:"), std::string::npos) << r.stdout_text;
  // UTS: a host name of its own.
  char host[HOST_NAME_MAX + 1] = {};
  gethostname(host, sizeof(host));
  EXPECT_NE(std::string(host), "dice-sandbox");
  EXPECT_NE(r.stdout_text.find("HOSTNAME dice-sandbox\n"), std::string::npos) << r.stdout_text;
  // /dev: the basic nodes, no GPU node without gpu_devices.
  EXPECT_NE(r.stdout_text.find("DEV ['fd', 'full', 'null', 'random', 'shm', 'stderr', 'stdin', "
                               "'stdout', 'urandom', 'zero']"),
            std::string::npos)
      << r.stdout_text;
}

TEST(SandboxIsolationTest, CompilerCannotIncludeHostFiles) {
  SKIP_UNLESS_ROOT();
  if (access("/usr/bin/g++", X_OK) != 0) GTEST_SKIP() << "no g++";
  HostDir cache;
  const std::string secret = cache.path + "/secret.h";
  std::ofstream(secret) << "#error the secret header was read\n";
  chmod(secret.c_str(), 0644);
  // The compile step's sandbox: a build folder of its own as workdir, the toolchain read-only.
  HostDir build;
  ASSERT_EQ(chown(build.path.c_str(), kSandboxUidBase + kSandboxUidCount - 1,
                  kSandboxUidBase + kSandboxUidCount - 1),
            0);
  auto compile = [&](const std::string& source) {
    std::ofstream(build.path + "/a.cc") << source;
    SandboxSpec spec;
    spec.argv = {"/usr/bin/g++", "-c", "a.cc", "-o", "a.o"};
    spec.workdir = build.path;
    spec.uid = spec.gid = kSandboxUidBase + kSandboxUidCount - 1;
    spec.timeout_seconds = 120;
    spec.memory_limit_mb = 4096;
    spec.max_processes = 64;
    return run_ok(spec);
  };
  SandboxResult ok = compile("#include <vector>\nint f() { return std::vector<int>(3).size(); }\n");
  EXPECT_TRUE(ok.succeeded()) << ok.stderr_text;
  EXPECT_TRUE(fs::exists(build.path + "/a.o"));
  SandboxResult passwd = compile("#include \"/etc/passwd\"\n");
  EXPECT_FALSE(passwd.succeeded());
  const std::string host_passwd = read_text("/etc/passwd");
  std::istringstream host_lines(host_passwd);
  for (std::string line; std::getline(host_lines, line);) {
    if (line.rfind("nobody:", 0) == 0 || line.size() < 8) continue;
    EXPECT_EQ(passwd.stderr_text.find(line.substr(0, line.find(':', line.find(':') + 1))),
              std::string::npos)
        << "the compiler showed the host's " << line << "\n"
        << passwd.stderr_text;
  }
  SandboxResult cached = compile("#include \"" + secret + "\"\n");
  EXPECT_FALSE(cached.succeeded());
  EXPECT_EQ(cached.stderr_text.find("the secret header was read"), std::string::npos);
  EXPECT_NE(cached.stderr_text.find("No such file or directory"), std::string::npos)
      << cached.stderr_text;
}

TEST(SandboxIsolationTest, TorchImportsInside) {
  SKIP_UNLESS_ROOT();
  if (std::system("/usr/bin/python3 -c 'import torch' 2>/dev/null") != 0) {
    GTEST_SKIP() << "/usr/bin/python3 has no torch (tools/setup installs python3-torch)";
  }
  SandboxSpec spec = python_spec(
      "import torch\n"
      "x = torch.arange(6.0).reshape(2, 3)\n"
      "print('torch', torch.__version__, float((x @ x.T).sum()))\n");
  spec.memory_limit_mb = 8192;
  spec.max_processes = 64;
  spec.env = {"OMP_NUM_THREADS=2"};
  SandboxResult r = run_ok(spec);
  ASSERT_TRUE(r.succeeded()) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find(" 83.0\n"), std::string::npos) << r.stdout_text;
  EXPECT_TRUE(r.private_root);
}

TEST(SandboxIsolationTest, ReadOnlyPathsAreThereReadOnlyEvenThroughAbsoluteLinks) {
  SKIP_UNLESS_ROOT();
  // A toolchain folder reached through an absolute symlink (as /opt/x -> /data/x on a node).
  HostDir real, links;
  std::ofstream(real.path + "/tool.txt") << "tool";
  chmod((real.path + "/tool.txt").c_str(), 0644);
  const std::string link = links.path + "/toolchain";
  ASSERT_EQ(symlink(real.path.c_str(), link.c_str()), 0);
  SandboxSpec spec = python_spec("print(open('" + link +
                                 "/tool.txt').read())\n"
                                 "try:\n"
                                 "    open('" +
                                 link +
                                 "/new.txt', 'w'); print('WROTE')\n"
                                 "except OSError as e:\n"
                                 "    print('refused', e)\n");
  spec.read_only_paths = {link};
  SandboxResult r = run_ok(spec);
  ASSERT_TRUE(r.succeeded()) << describe_sandbox_result(r) << r.stderr_text;
  EXPECT_EQ(r.stdout_text.rfind("tool\n", 0), 0u) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("Read-only file system"), std::string::npos) << r.stdout_text;
  EXPECT_FALSE(fs::exists(real.path + "/new.txt"));
}

// A shared library the test process has loaded (libm or libgcc_s), or "" (from /proc/self/maps).
std::string loaded_library() {
  std::istringstream maps(read_text("/proc/self/maps"));
  for (std::string line; std::getline(maps, line);) {
    const size_t path = line.find('/');
    if (path == std::string::npos) continue;
    const std::string name = fs::path(line.substr(path)).filename().string();
    if (name.rfind("libm.so", 0) == 0 || name.rfind("libgcc_s.so", 0) == 0) {
      return line.substr(path);
    }
  }
  return "";
}

TEST(SandboxIsolationTest, MaskedFilesReadEmptyAndDoNotLoad) {
  SKIP_UNLESS_ROOT();
  const std::string library = loaded_library();
  if (library.empty()) GTEST_SKIP() << "no libm or libgcc_s mapped to copy";
  // A stand-in for NVML in a folder the root binds: a real library (loads unmasked), reached
  // through a link as libnvidia-ml.so.1 is, with a file beside it that stays readable.
  HostDir lib;
  const std::string real = lib.path + "/libstandin.so.1.2";
  const std::string link = lib.path + "/libstandin.so.1";
  fs::copy_file(library, real);
  chmod(real.c_str(), 0755);
  ASSERT_EQ(symlink("libstandin.so.1.2", link.c_str()), 0);
  std::ofstream(lib.path + "/sibling.txt") << "sibling";
  chmod((lib.path + "/sibling.txt").c_str(), 0644);
  const std::string code =
      "import ctypes\n"
      "print('SIZE', len(open('" +
      link +
      "', 'rb').read()))\n"
      "print('SIBLING', open('" +
      lib.path +
      "/sibling.txt').read())\n"
      "try:\n"
      "    ctypes.CDLL('" +
      link +
      "'); print('LOADED')\n"
      "except OSError as e:\n"
      "    print('NOT LOADED', e)\n"
      "try:\n"
      "    open('" +
      real +
      "', 'wb'); print('OPENED FOR WRITING')\n"
      "except OSError as e:\n"
      "    print('NOT WRITABLE', e)\n";
  const auto size = fs::file_size(real);

  SandboxSpec plain = python_spec(code);
  plain.read_only_paths = {lib.path};
  SandboxResult unmasked = run_ok(plain);
  ASSERT_TRUE(unmasked.succeeded()) << unmasked.stderr_text;
  EXPECT_NE(unmasked.stdout_text.find("SIZE " + std::to_string(size) + "\n"), std::string::npos)
      << unmasked.stdout_text;
  EXPECT_NE(unmasked.stdout_text.find("LOADED\n"), std::string::npos) << unmasked.stdout_text;

  // Masked through the link (its real path is what gets the bind); a missing path is skipped.
  SandboxSpec masked = plain;
  masked.masked_files = {link, lib.path + "/missing.so", "/nonexistent/dice-mask"};
  SandboxResult r = run_ok(masked);
  ASSERT_TRUE(r.succeeded()) << describe_sandbox_result(r) << r.unavailable_reason << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("SIZE 0\n"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("SIBLING sibling\n"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("NOT LOADED"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("file too short"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("NOT WRITABLE"), std::string::npos) << r.stdout_text;
  // The host's file is untouched.
  EXPECT_EQ(fs::file_size(real), size);
}

TEST(SandboxIsolationTest, NvmlOnTheRunsLibraryPathDoesNotLoad) {
  SKIP_UNLESS_ROOT();
  const std::string library = loaded_library();
  if (library.empty()) GTEST_SKIP() << "no libm or libgcc_s mapped to copy";
  // Every isolated run masks NVML wherever its linker would look (sandbox_env.h): here a
  // stand-in under its own name in a folder of LD_LIBRARY_PATH, beside a library that loads.
  HostDir lib;
  for (const char* name : {"libnvidia-ml.so.1", "libother.so.1"}) {
    fs::copy_file(library, lib.path + "/" + name);
    chmod((lib.path + "/" + name).c_str(), 0755);
  }
  SandboxSpec spec = python_spec(
      "import ctypes\n"
      "for name in ['libother.so.1', 'libnvidia-ml.so.1']:\n"
      "    try:\n"
      "        ctypes.CDLL(name); print('LOADED', name)\n"
      "    except OSError as e:\n"
      "        print('NOT LOADED', e)\n");
  spec.env = {"LD_LIBRARY_PATH=" + lib.path};
  SandboxResult r = run_ok(spec);
  ASSERT_TRUE(r.succeeded()) << describe_sandbox_result(r) << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("LOADED libother.so.1\n"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("NOT LOADED " + lib.path + "/libnvidia-ml.so.1: file too short"),
            std::string::npos)
      << r.stdout_text;
  EXPECT_GT(fs::file_size(lib.path + "/libnvidia-ml.so.1"), 0u);
}

TEST(SandboxIsolationTest, PrunedDirsHoldOnlyWhatTheyKeep) {
  SKIP_UNLESS_ROOT();
  // A stand-in for /proc/driver/nvidia with three GPUs; the run has the second.
  HostDir driver;
  auto write = [&](const std::string& relative, const std::string& text) {
    const fs::path path = driver.path + "/" + relative;
    fs::create_directories(path.parent_path());
    std::ofstream(path) << text;
    chmod(path.c_str(), 0644);
  };
  write("params", "ModifyDeviceFiles: 1\n");
  write("version", "NVRM version: 550.54.15\n");
  write("warnings/README", "not kept\n");
  for (const char* bus : {"0000:18:00.0", "0000:3b:00.0", "0000:86:00.0"}) {
    write(std::string("gpus/") + bus + "/information", std::string("Bus Location: ") + bus + "\n");
  }
  SandboxSpec spec = python_spec(
      "import os\n"
      "d = '" +
      driver.path +
      "'\n"
      "print('TOP', sorted(os.listdir(d)))\n"
      "print('GPUS', sorted(os.listdir(d + '/gpus')))\n"
      "print('INFO', open(d + '/gpus/0000:3b:00.0/information').read(), end='')\n"
      "print('PARAMS', open(d + '/params').read(), end='')\n"
      "try:\n"
      "    open(d + '/new', 'w'); print('WROTE')\n"
      "except OSError as e:\n"
      "    print('NOT WRITABLE', e)\n");
  spec.read_only_paths = {driver.path};
  spec.pruned_dirs = {nvidia_proc_view(driver.path, {1})};
  SandboxResult r = run_ok(spec);
  ASSERT_TRUE(r.succeeded()) << describe_sandbox_result(r) << r.unavailable_reason << r.stderr_text;
  EXPECT_NE(r.stdout_text.find("TOP ['gpus', 'params', 'version']\n"), std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("GPUS ['0000:3b:00.0']\n"), std::string::npos) << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("INFO Bus Location: 0000:3b:00.0\n"), std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("PARAMS ModifyDeviceFiles: 0\n"), std::string::npos)
      << r.stdout_text;
  EXPECT_NE(r.stdout_text.find("NOT WRITABLE"), std::string::npos) << r.stdout_text;
  // A pruned folder the root does not hold is skipped: the run starts and it stays absent.
  HostDir elsewhere;
  SandboxSpec absent =
      python_spec("import os\nprint('EXISTS', os.path.exists('" + elsewhere.path + "'))\n");
  absent.pruned_dirs = {nvidia_proc_view(elsewhere.path, {0})};
  SandboxResult skipped = run_ok(absent);
  ASSERT_TRUE(skipped.succeeded()) << describe_sandbox_result(skipped) << skipped.stderr_text;
  EXPECT_NE(skipped.stdout_text.find("EXISTS False\n"), std::string::npos) << skipped.stdout_text;
}

// A marker file the command would write, in a workdir the test keeps.
struct Marker {
  HostDir dir;
  std::string path = dir.path + "/ran";
  SandboxSpec spec() const {
    SandboxSpec s;
    s.argv = {"/bin/sh", "-c", "echo ran > " + path};
    s.workdir = dir.path;
    s.timeout_seconds = 30;
    return s;
  }
};

void expect_not_run(const SandboxResult& r, const Marker& marker, const std::string& layer) {
  EXPECT_TRUE(r.unavailable);
  EXPECT_EQ(classify_sandbox_failure(r), FC::SANDBOX_UNAVAILABLE);
  EXPECT_EQ(r.unavailable_reason.rfind(layer, 0), 0u) << r.unavailable_reason;
  EXPECT_NE(describe_sandbox_result(r).find("sandbox-unavailable: " + layer), std::string::npos);
  EXPECT_FALSE(fs::exists(marker.path)) << "the command ran";
}

TEST(SandboxIsolationTest, AMissingRootPathMeansTheCommandDoesNotRun) {
  SKIP_UNLESS_ROOT();
  Marker marker;
  SandboxSpec spec = marker.spec();
  spec.read_only_paths = {"/nonexistent/dice-root-bind"};
  SandboxResult r = run_ok(spec);
  expect_not_run(r, marker, "root:");
  EXPECT_NE(r.unavailable_reason.find("/nonexistent/dice-root-bind"), std::string::npos);
  // The same spec without the missing path runs: the marker proves the test would see a run.
  SandboxResult ran = run_ok(marker.spec());
  EXPECT_TRUE(ran.succeeded()) << ran.stderr_text;
  EXPECT_TRUE(fs::exists(marker.path));
}

TEST(SandboxIsolationTest, ALayerFailingInTheChildIsReportedAndTheCommandDoesNotRun) {
  SKIP_UNLESS_ROOT();
  // The GPU node of an ordinal this host does not have: refused before the clone.
  {
    Marker marker;
    SandboxSpec spec = marker.spec();
    spec.gpu_devices = {4000};
    expect_not_run(run_ok(spec), marker, "root:");
  }
  // A tmpfs size the kernel refuses: the child's mount fails, the child reports the step and
  // errno through the status pipe.
  Marker marker;
  SandboxSpec spec = marker.spec();
  spec.tmpfs_size_mb = -5;
  SandboxResult r = run_ok(spec);
  expect_not_run(r, marker, "root: mount /dev/shm");
  EXPECT_NE(r.unavailable_reason.find("errno 22"), std::string::npos) << r.unavailable_reason;
}

TEST(SandboxIsolationTest, RequiredCgroupsFailClosedWhereTheHostHasNone) {
  SKIP_UNLESS_ROOT();
  Marker marker;
  SandboxSpec spec = marker.spec();
  spec.cgroups = SandboxCgroups::kRequired;
  SandboxResult r = run_ok(spec);
  if (sandbox_cgroups_available().ok()) {
    // This host has them: the run is limited, from inside its own cgroup.
    EXPECT_TRUE(r.succeeded()) << describe_sandbox_result(r) << r.stderr_text;
    EXPECT_TRUE(r.cgroup);
    return;
  }
  expect_not_run(r, marker, "cgroup:");
  // auto: the same host runs it, with rlimits only, and says so.
  spec.cgroups = SandboxCgroups::kAuto;
  SandboxResult ran = run_ok(spec);
  EXPECT_TRUE(ran.succeeded()) << describe_sandbox_result(ran) << ran.stderr_text;
  EXPECT_FALSE(ran.cgroup);
  EXPECT_TRUE(fs::exists(marker.path));
}

}  // namespace
}  // namespace dice
