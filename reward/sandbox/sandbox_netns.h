// NetnsPool: network namespaces created ahead of time and reused by sandboxed runs (sandbox.h),
// so that a run joins one with setns() instead of creating and destroying its own.
//
// Why: a network namespace per run is the dearest part of the sandbox's setup. On the dev VM
// (kernel 6.18) a clone with PID and mount namespaces and a /proc mount took 0.2 ms at p50,
// 2 ms with a new network namespace as well; creation takes the global rtnl lock (loopback
// registration) and runs every registered pernet subsystem's init, and the teardown is queued to
// one kernel work queue that waits for RCU grace periods. Hosts that load more pernet subsystems
// (netfilter, IPv6, RDMA) pay more per namespace. A pooled namespace costs a setns().
// (The H200 node's collapse of twelve concurrent namespaced runs was most likely not this but
// the init's fork() hanging on a copied malloc lock; see raw_fork in sandbox_child.cc.)
//
// Life of a namespace (one run at a time, so concurrent candidates never share one: abstract
// unix sockets and ports are per namespace):
//
//   created (refill thread, unshare) --> idle --> leased: the run's init setns()es into it and
//                                         ^        checks that it is clean
//                                         |          | clean            | not clean
//                                         +----------+                  v
//                      returned when the run ends       the init unshare()s a fresh one for
//                      (its PID namespace died with     this run; the parent discards the
//                      everything it held)              pooled one (closed; the kernel
//                                                       destroys it in the background)
//
// "Clean" (netns_is_pristine) is what a fresh namespace looks like: only `lo`, down, and no
// socket (/proc/net/sockstat counts zero). An unprivileged candidate cannot configure the
// namespace (it is owned by the init user namespace: no CAP_NET_ADMIN there), so what it can
// leave is sockets, and every socket dies with the process holding it when the run's PID
// namespace ends; the check makes that an observed fact for every run rather than an
// assumption. It runs in the run's own child, in parallel with every other run (a check in one
// pool thread, reading the socket tables, halved short runs' throughput at 4-12 concurrent).
// A root run could configure anything, so its namespace is never reused.
//
// The pool grows to the largest number of runs leased at once plus two spares (prewarm() raises
// that target ahead of time), and replaces discarded namespaces, off the runs' path, in one
// background thread. Idle namespaces are handed out oldest first.
#pragma once

#include <chrono>
#include <cstdint>

#include "common/status.h"

namespace dice {

class NetnsPool;

// One run's namespace: an fd of the namespace (for setns) held by this process. Returned to the
// pool on destruction.
class NetnsLease {
 public:
  NetnsLease() = default;
  NetnsLease(NetnsLease&& other) noexcept;
  NetnsLease& operator=(NetnsLease&& other) noexcept;
  ~NetnsLease();
  NetnsLease(const NetnsLease&) = delete;
  NetnsLease& operator=(const NetnsLease&) = delete;

  int fd() const { return fd_; }
  // The namespace must not serve another run (the run was root and could have configured it,
  // or the run's init found it not clean).
  void discard_after_use() { reusable_ = false; }

 private:
  friend class NetnsPool;
  NetnsLease(NetnsPool* pool, int fd) : pool_(pool), fd_(fd) {}
  void give_back();

  NetnsPool* pool_ = nullptr;
  int fd_ = -1;
  bool reusable_ = true;
};

struct NetnsPoolStats {
  std::int64_t created = 0;    // namespaces created by the refill thread
  std::int64_t leased = 0;     // leases handed out
  std::int64_t discarded = 0;  // namespaces closed after a run (found not clean, or a root run)
  std::int64_t idle = 0;       // namespaces ready now
};

class NetnsPool {
 public:
  // The process-wide pool. It and its thread live until the process exits (never destroyed, so
  // no run can outlive it at exit).
  static NetnsPool& shared();

  // A namespace of its own for one run. Waits for the refill thread when none is idle (up to
  // `wait`). Errors: unavailable when this process may not create network namespaces (not root),
  // or creation failed (the message says why); timeout after `wait`. Callers fall back to a
  // namespace of the run's own (CLONE_NEWNET).
  Result<NetnsLease> acquire(std::chrono::milliseconds wait = std::chrono::seconds(10));

  // Have at least `count` namespaces ready (e.g. one per evaluation slot at service start); does
  // not wait for them.
  void prewarm(int count);

  NetnsPoolStats stats() const;

 private:
  NetnsPool();
  struct State;
  friend class NetnsLease;
  void give_back(int fd, bool reusable);
  void refill_loop();

  State* state_;  // never freed, like the pool itself
};

// Whether the calling process's network namespace is clean (see above). For the sandbox's
// child between clone and exec: system calls only, no allocation.
bool netns_is_pristine();

}  // namespace dice
