// The learner's side of the transport: a ROUTER socket that workers connect to, and one poll-loop
// thread that runs DispatcherState (see dispatcher_state.h for the protocol).
//
//   submitters --submit()--> [pending queue] --credits--> workers
//   workers --results--> [result queue] --next_result()--> consumers
//
// Both queues are bounded: submit() waits while the pending queue is full, and no work is
// dispatched while the result queue is full. close() stops the loop and wakes every waiter.
//
// Threads: the loop receives, keeps time and sends; a submitter whose work can go out at once
// (a worker has a credit) sends it itself, under socket_mutex_, instead of waking the loop to do
// it: one thread hand-off fewer per item. ZeroMQ sockets may change threads between calls when a
// mutex orders them; see has_input() for how the loop still wakes for every message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/status.h"
#include "common/transport/dispatcher_state.h"
#include "common/transport/transport_options.h"
#include "common/transport/wakeup.h"

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

  // The next result (Candidate, Verdict or Error envelope), each (work id, part) exactly once.
  // Timeout when none came within `timeout`; Aborted after close().
  Result<WorkResult> next_result(std::chrono::milliseconds timeout);

  // Sends an encoded envelope to every registered worker (WeightsUpdate, Shutdown).
  Status broadcast(std::string payload);

  DispatcherStats stats() const;

  // Stops the loop, closes the socket and wakes every waiter; idempotent.
  void close();

 private:
  explicit WorkDispatcher(DispatcherOptions options);
  void run();
  // Receives what is waiting (up to a round's worth) and hands it to the state. Returns whether
  // it stopped at the round's limit (more may be waiting).
  bool receive_all();
  // Sends the state's outbox, from any thread. Returns whether input waits on the socket (the
  // sends may have consumed the descriptor's edge for it); false when there was nothing to send.
  bool flush();
  // flush() for a thread other than the loop: wakes the loop if input waits.
  void flush_and_wake();

  DispatcherOptions options_;
  zmq::context_t context_;
  std::string endpoint_;
  Wakeup wakeup_;

  std::mutex socket_mutex_;     // taken before mutex_ when both are held
  zmq::socket_t router_;        // guarded by socket_mutex_
  bool socket_closed_ = false;  // guarded by socket_mutex_

  mutable std::mutex mutex_;
  std::condition_variable queue_not_full_;
  std::condition_variable result_ready_;
  DispatcherState state_;  // guarded by mutex_
  bool closing_ = false;   // guarded by mutex_
  std::thread thread_;
};

}  // namespace dice::transport
