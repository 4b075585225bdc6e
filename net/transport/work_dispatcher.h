// The learner's side of the transport: a ROUTER socket that workers connect to, and one background
// thread that keeps DispatcherState's timers (see dispatcher_state.h for the protocol).
//
//   submitters --submit()--> [pending queue] --credits--> workers
//   workers --results--> [result queue] --next_result()--> consumers
//
// Both queues are bounded: submit() waits while the pending queue is full, and no work is
// dispatched while the result queue is full. close() stops the thread and wakes every waiter.
//
// Threads: a thread waiting in next_result() reads the socket itself (see poller_role.h); the
// background thread heartbeats, declares silent workers dead, and reads the socket while no one
// has waited in next_result() for a little while, so credits and acks are handled while the
// consumer is busy. A submitter whose work can go out at once (a worker has a credit) sends it
// itself, under socket_mutex_. ZeroMQ sockets may change threads between calls when a mutex
// orders them; see has_input() for how a thread asleep on the socket still wakes for every message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/status.h"
#include "net/transport/dispatcher_state.h"
#include "net/transport/poller_role.h"
#include "net/transport/transport_options.h"
#include "net/transport/wakeup.h"
#include "net/transport/zap_handler.h"

namespace dice::transport {

class WorkDispatcher {
 public:
  // Binds options.bind_endpoint and starts the poll loop. IOError names the endpoint when the
  // bind fails (address in use, bad endpoint).
  static Result<std::unique_ptr<WorkDispatcher>> start(DispatcherOptions options);
  ~WorkDispatcher();  // close()
  WorkDispatcher(const WorkDispatcher&) = delete;
  WorkDispatcher& operator=(const WorkDispatcher&) = delete;

  // The endpoint actually bound, e.g. "tcp://127.0.0.1:41733" for a bind to port *.
  const std::string& endpoint() const { return endpoint_; }

  // Queues one work item. Waits up to `timeout` while the queue is full, then Unavailable; a zero
  // timeout rejects at once. InvalidArgument for a reused or zero work id; Aborted after close().
  Status submit(WorkItem item, std::chrono::milliseconds timeout);

  // Cancels the items of `work_ids` (DispatcherState::cancel): withdrawn while queued, a Cancel
  // to their worker once sent (their results are dropped from then on); returns how many were
  // either. Unknown and completed ids are ignored.
  std::size_t cancel(const std::vector<std::uint64_t>& work_ids);

  // The next result (Candidate, Verdict or Error envelope), each (work id, part) exactly once.
  // Timeout when none came within `timeout`; Aborted after close().
  Result<WorkResult> next_result(std::chrono::milliseconds timeout);

  // Sends an encoded envelope to every registered worker (WeightsUpdate).
  Status broadcast(std::string payload);
  // Sends an encoded Shutdown to every registered worker; the workers that go after it have
  // left, not died (DispatcherState::broadcast_shutdown).
  Status broadcast_shutdown(std::string payload);

  DispatcherStats stats() const;

  // Stops the loop, closes the socket and wakes every waiter; idempotent.
  void close();

 private:
  struct Received {
    std::size_t messages = 0;  // messages taken off the socket
    bool more = false;         // stopped at the round's limit: more may be waiting
    bool armed = false;        // found the socket empty and marked its poller as about to sleep
  };
  explicit WorkDispatcher(DispatcherOptions options);
  void run();
  // The role's holder: receives what is waiting (up to `max_messages`), hands it to the state,
  // dispatches and sends; when nothing was waiting and `sleep`, sleeps on the socket until input,
  // a poke or `until`.
  Received poll_once(TimePoint until, bool sleep, std::size_t max_messages);
  // poll_once() on a consumer's thread, which has taken the role; `lock` (on mutex_) is released
  // meanwhile, and the role after.
  Received consumer_round(std::unique_lock<std::mutex>& lock, TimePoint until, bool sleep,
                          std::size_t max_messages);
  // Receives what is waiting and hands it to the state; with nothing waiting and `arm`, marks the
  // caller as about to sleep on the socket (under socket_mutex_, so no sender slips in between).
  Received receive_all(bool arm, std::size_t max_messages);
  // Heartbeats, dead workers, dispatch, then sends; false once closing.
  bool run_timers(TimePoint now);
  // Sends the state's outbox, from any thread, and pokes the poller if its edge may be gone.
  void flush_and_wake();
  // After a socket operation: pokes the thread asleep on the socket (if any) when input waits,
  // since the operation may have consumed the descriptor's edge. Caller holds socket_mutex_.
  void wake_sleeper_if_input();

  DispatcherOptions options_;
  zmq::context_t context_;
  std::unique_ptr<ZapHandler> zap_;  // with CURVE; destroyed before context_
  std::string endpoint_;
  Wakeup wakeup_;  // pokes whichever thread sleeps on the socket (the role's holder)

  std::mutex socket_mutex_;        // taken before mutex_ when both are held
  zmq::socket_t router_;           // guarded by socket_mutex_
  int socket_fd_ = -1;             // ZeroMQ's descriptor for router_; set before any thread starts
  bool socket_closed_ = false;     // guarded by socket_mutex_
  bool poller_asleep_ = false;     // guarded by socket_mutex_: the holder sleeps on socket_fd_
  std::vector<Outbound> sending_;  // guarded by socket_mutex_: the outbox being sent

  mutable std::mutex mutex_;
  std::condition_variable queue_not_full_;
  std::condition_variable result_ready_;
  std::condition_variable background_wake_;
  DispatcherState state_;  // guarded by mutex_
  PollerRole role_;        // guarded by mutex_
  bool closing_ = false;   // guarded by mutex_
  std::thread thread_;
};

}  // namespace dice::transport
