// The sandbox's system-call filter (seccomp, classic BPF), installed last before a sandboxed
// command's exec, after no_new_privs.
//
// What it refuses (EPERM, so programs that probe a feature see "not permitted" and go on):
// anything that makes or enters namespaces (unshare, setns, clone with a CLONE_NEW* flag),
// mounts and root changes (mount, umount2, pivot_root, chroot, the new mount API), looking into
// or writing other processes (ptrace, process_vm_readv/writev, pidfd_getfd, process_madvise,
// process_mrelease, kcmp), memory hidden from the kernel's own mappings (memfd_secret), the kernel
// keyring, bpf, userfaultfd, perf_event_open, module and kexec loading, io_uring (its requests
// bypass this filter), handle-based opens (open_by_handle_at can reach files outside a bind
// mount), quotas, swap, reboot, syslog, acct, and the x86 port and legacy calls (iopl, ioperm,
// uselib, _sysctl, nfsservctl, lookup_dcookie, vhangup); sockets of any family but AF_UNIX,
// AF_INET, AF_INET6 and AF_NETLINK (AF_VSOCK reaches the host past the network namespace; the
// others are kernel attack surface no candidate needs). clone3 gets ENOSYS: its flags are in memory
// the filter cannot read, and glibc falls back to clone(), whose flags it can. A system call of
// another architecture than the worker's (x86_64 or aarch64; on x86_64 also the x32 ABI) kills the
// process: the numbers above would mean other calls there.
//
// Why hand-written BPF and not libseccomp: the project adds no library family without asking, and
// this filter is a list of numbers and one flag test; it is built once in the worker (allocation
// there) and installed in the child with one system call (no allocation between clone and exec).
#pragma once

#include <linux/filter.h>

namespace dice {

// The filter, built on first use and never freed.
const sock_fprog& sandbox_seccomp_program();

// Installs `program` in the calling thread (no_new_privs must be set first). System calls only,
// for the sandbox's child: 0, or -1 with errno set.
int install_seccomp(const sock_fprog& program);

}  // namespace dice
