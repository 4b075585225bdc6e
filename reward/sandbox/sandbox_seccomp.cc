#include "reward/sandbox/sandbox_seccomp.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <iterator>
#include <vector>

namespace dice {
namespace {

#if defined(__x86_64__)
constexpr unsigned kNativeArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kNativeArch = AUDIT_ARCH_AARCH64;
#else
#error "the sandbox's seccomp filter knows x86_64 and aarch64 only"
#endif

// Every flag of clone() that makes a namespace. CLONE_NEWTIME (0x80) is left out: in clone() that
// bit is part of the exit signal, and only clone3/unshare, both refused whole, can ask for it.
constexpr unsigned kCloneNewFlags = CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
                                    CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET;

// System calls from Linux 5.6 on have one number on every architecture (asm-generic/unistd.h,
// arch/x86/entry/syscalls/syscall_64.tbl); the worker's headers may be older than the kernel it
// runs on, so these are spelled out, and checked against the headers that know them.
constexpr long kNrPidfdGetfd = 438;       // Linux 5.6: a copy of another process's descriptor
constexpr long kNrProcessMadvise = 440;   // 5.10: advice on another process's memory
constexpr long kNrQuotactlFd = 443;       // 5.14
constexpr long kNrMemfdSecret = 447;      // 5.14: memory the kernel's own mappings drop
constexpr long kNrProcessMrelease = 448;  // 5.15: another process's memory, freed
#ifdef __NR_pidfd_getfd
static_assert(__NR_pidfd_getfd == kNrPidfdGetfd, "pidfd_getfd's number");
#endif
#ifdef __NR_process_madvise
static_assert(__NR_process_madvise == kNrProcessMadvise, "process_madvise's number");
#endif
#ifdef __NR_quotactl_fd
static_assert(__NR_quotactl_fd == kNrQuotactlFd, "quotactl_fd's number");
#endif
#ifdef __NR_memfd_secret
static_assert(__NR_memfd_secret == kNrMemfdSecret, "memfd_secret's number");
#endif
#ifdef __NR_process_mrelease
static_assert(__NR_process_mrelease == kNrProcessMrelease, "process_mrelease's number");
#endif

// System calls answered with EPERM (those this architecture's headers know, and the numbered
// ones above).
constexpr long kRefused[] = {
    __NR_unshare,
    __NR_setns,
    __NR_mount,
    __NR_umount2,
    __NR_pivot_root,
    __NR_chroot,
    __NR_ptrace,
    __NR_process_vm_readv,
    __NR_process_vm_writev,
    __NR_keyctl,
    __NR_add_key,
    __NR_request_key,
    __NR_bpf,
    __NR_userfaultfd,
    __NR_perf_event_open,
    __NR_kexec_load,
    __NR_init_module,
    __NR_finit_module,
    __NR_delete_module,
    __NR_open_by_handle_at,
    __NR_name_to_handle_at,
    __NR_swapon,
    __NR_swapoff,
    __NR_reboot,
    __NR_syslog,
    __NR_acct,
    kNrPidfdGetfd,
    kNrProcessMadvise,
    kNrProcessMrelease,
    kNrMemfdSecret,
    kNrQuotactlFd,
    __NR_kcmp,
    __NR_quotactl,
    __NR_vhangup,
#ifdef __NR_lookup_dcookie
    __NR_lookup_dcookie,
#endif
#ifdef __NR_uselib
    __NR_uselib,
#endif
#ifdef __NR__sysctl
    __NR__sysctl,
#endif
#ifdef __NR_nfsservctl
    __NR_nfsservctl,
#endif
#ifdef __NR_iopl
    __NR_iopl,
    __NR_ioperm,
#endif
#ifdef __NR_kexec_file_load
    __NR_kexec_file_load,
#endif
#ifdef __NR_io_uring_setup
    __NR_io_uring_setup,
    __NR_io_uring_enter,
    __NR_io_uring_register,
#endif
#ifdef __NR_open_tree
    __NR_open_tree,
    __NR_move_mount,
    __NR_fsopen,
    __NR_fsconfig,
    __NR_fsmount,
    __NR_fspick,
#endif
#ifdef __NR_mount_setattr
    __NR_mount_setattr,
#endif
#ifdef __NR_umount
    __NR_umount,
#endif
};

// The socket families a sandboxed process may create (socket, socketpair): local sockets (the
// judge's channel, Python, CUDA's IPC) and the internet families (an empty network namespace
// holds only its loopback) and netlink (glibc reads interfaces through it). Every other family
// (AF_VSOCK, which reaches the host and its VMs past any network namespace; AF_BLUETOOTH,
// AF_ALG's kernel crypto, AF_PACKET, AF_KEY, AF_XDP, AF_RDS, AF_TIPC, AF_CAN, ...) is refused:
// a list of what is allowed, so families a later kernel adds are refused too.
constexpr unsigned kAllowedSocketFamilies[] = {AF_UNIX, AF_INET, AF_INET6, AF_NETLINK};

sock_filter stmt(unsigned short code, unsigned k) {
  return BPF_STMT(code, k);
}

sock_filter jump(unsigned short code, unsigned k, unsigned char jt, unsigned char jf) {
  return BPF_JUMP(code, k, jt, jf);
}

std::vector<sock_filter> build_filter() {
  constexpr unsigned kRetErrno = SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA);
  std::vector<sock_filter> f;
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 1, 0));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
#if defined(__x86_64__)
  // The x32 ABI reaches the same calls with this bit set in the number.
  f.push_back(jump(BPF_JMP | BPF_JGE | BPF_K, 0x40000000u, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
#endif
  for (long nr : kRefused) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, 1));
    f.push_back(stmt(BPF_RET | BPF_K, kRetErrno));
  }
  // socket and socketpair: the family is the first argument; its low 32 bits are the int the
  // kernel reads. Both end here (the accumulator no longer holds the call's number).
  constexpr unsigned kFamilies = std::size(kAllowedSocketFamilies);
  for (long nr : {static_cast<long>(__NR_socket), static_cast<long>(__NR_socketpair)}) {
    f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<unsigned>(nr), 0, kFamilies + 3));
    f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
    for (unsigned i = 0; i < kFamilies; ++i) {
      // Equal: jump over the remaining tests and the refusal to the ALLOW.
      f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, kAllowedSocketFamilies[i],
                       static_cast<unsigned char>(kFamilies - i), 0));
    }
    f.push_back(stmt(BPF_RET | BPF_K, kRetErrno));
    f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  }
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS & SECCOMP_RET_DATA)));
  // clone: the flags are the first argument on both architectures; the low 32 bits (first in
  // memory: both are little-endian) are all the kernel reads of them.
  f.push_back(jump(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3));
  f.push_back(stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args[0])));
  f.push_back(jump(BPF_JMP | BPF_JSET | BPF_K, kCloneNewFlags, 0, 1));
  f.push_back(stmt(BPF_RET | BPF_K, kRetErrno));
  f.push_back(stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return f;
}

}  // namespace

const sock_fprog& sandbox_seccomp_program() {
  // Built once, never freed: children of any later run read it between clone and exec. The
  // vector is held by a static of its own: kept only through its data(), it was unreachable, a
  // leak LeakSanitizer reported (tools/test --sanitize address,undefined).
  static std::vector<sock_filter>* const kFilter = new std::vector<sock_filter>(build_filter());
  static const sock_fprog kProgram{static_cast<unsigned short>(kFilter->size()), kFilter->data()};
  return kProgram;
}

int install_seccomp(const sock_fprog& program) {
  return static_cast<int>(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program));
}

}  // namespace dice
