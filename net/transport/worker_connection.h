// A worker's side of the transport: a DEALER socket connected to the learner and one background
// thread. On start (and again whenever the learner seems to have forgotten it) it sends Hello and
// a Credit for its free slots; it heartbeats every interval; work and control messages from the
// learner queue up for receive(); results and acks are sent by the thread that queues them.
//
// The learner may restart: ZeroMQ reconnects the socket by itself, and this worker says Hello
// again when a learner heartbeat is not addressed to it (the new learner does not know it) or when
// the learner has been silent for misses_before_dead intervals.
//
// Threads: a thread waiting in receive() reads the socket itself (see poller_role.h); the
// background thread keeps the timers, and reads the socket while no one has waited in receive()
// for a little while. send_result() and finish() send under socket_mutex_ on the calling thread.
// ZeroMQ sockets may change threads between calls when a mutex orders them; see has_input() for
// how a thread asleep on the socket still wakes for every message.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/status.h"
#include "net/transport/poller_role.h"
#include "net/transport/transport_options.h"
#include "net/transport/wakeup.h"
#include "net/wire/envelope.h"

namespace dice::transport {

// Queue depths and counters, for metrics. Counters only grow.
struct WorkerStats {
  std::size_t inbox = 0;   // messages waiting for receive()
  std::size_t outbox = 0;  // frames waiting to be sent
  std::size_t held = 0;    // work items received and not finished
  std::uint64_t received_work = 0;
  std::uint64_t finished = 0;
  std::uint64_t hellos_sent = 0;       // first Hello included
  std::uint64_t duplicate_work = 0;    // a work id already held, sent again: dropped
  std::uint64_t refused_work = 0;      // inbox full: answered with an Error
  std::uint64_t malformed_frames = 0;  // undecodable frames: dropped
  std::uint64_t unexpected_messages = 0;
  std::uint64_t heartbeats_dropped = 0;  // not sent because the socket would block
  std::uint64_t cancels_received = 0;    // Cancels for items held: passed on to receive()
  std::uint64_t cancels_ignored = 0;     // Cancels for items not held (finished, never received)
};

class WorkerConnection {
 public:
  // Connects to options.learner_endpoint and starts the loop; the learner need not be up yet.
  // InvalidArgument for a missing endpoint/worker id or zero capacity.
  static Result<std::unique_ptr<WorkerConnection>> start(WorkerOptions options);
  ~WorkerConnection();  // close()
  WorkerConnection(const WorkerConnection&) = delete;
  WorkerConnection& operator=(const WorkerConnection&) = delete;

  const std::string& worker_id() const { return options_.worker_id; }

  // The next message to act on: a RolloutRequest or EvalRequest (work; answer it, then finish()),
  // a WeightsUpdate, a Shutdown, or a Cancel of an item this worker holds (stop it and finish()
  // it without a result; it comes after the item itself). Timeout when none came; Aborted after
  // close().
  Result<wire::Decoded<schema::Envelope>> receive(std::chrono::milliseconds timeout);

  // Queues an encoded result envelope (Candidate, Verdict, Error with a work id). Waits up to
  // `timeout` while the outbox is full, then Unavailable; Aborted after close().
  Status send_result(std::string payload, std::chrono::milliseconds timeout);

  // The work item is done (all its results were queued before this call): sends an Ack that also
  // credits the freed slot. InvalidArgument for a work id this worker does not hold.
  Status finish(std::uint64_t work_id);

  // send_result() of `last_result` (an envelope from init_envelope(): the item's last Candidate,
  // Verdict or Error) and finish() in one message: the envelope carries the Ack (Envelope.ack), so
  // the learner gets one message where the two calls send two. Errors: as send_result(), then as
  // finish(); on any error nothing was sent and the item is still held.
  Status finish(std::uint64_t work_id, capnp::MessageBuilder& last_result,
                std::chrono::milliseconds timeout);

  // Builds an envelope stamped with this worker's id and run id, for send_result().
  schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message) const;

  WorkerStats stats() const;

  // Stops the loop and wakes every waiter; idempotent. Unsent frames are dropped.
  void close();

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  explicit WorkerConnection(WorkerOptions options);
  void run();
  struct Received {
    std::size_t messages = 0;  // messages taken off the socket
    std::size_t work = 0;      // of which added to the inbox
    bool more = false;         // stopped at the round's limit: more may be waiting
    bool armed = false;        // found the socket empty and marked its poller as about to sleep
  };
  // The role's holder: receives what is waiting (up to `max_messages`), handles it and sends what
  // that queued; when nothing was waiting, sleeps on the socket until input, a poke or `until`.
  Received poll_once(TimePoint until, std::size_t max_messages);
  // Receives what is waiting and handles it; with nothing waiting and `arm`, marks the caller as
  // about to sleep on the socket (under socket_mutex_, so no sender can slip in between).
  Received receive_all(TimePoint now, bool arm, std::size_t max_messages);
  void handle(wire::Decoded<schema::Envelope> envelope, TimePoint now);
  // Heartbeat and re-Hello when due, then the outbox; false once closing.
  bool run_timers(TimePoint now);
  // Sends the outbox, from any thread, and pokes the poller if its socket edge may be gone.
  void flush_and_wake();
  // After a socket operation: pokes the thread asleep on the socket (if any) when input waits,
  // since the operation may have consumed the descriptor's edge. Caller holds socket_mutex_.
  void wake_sleeper_if_input();
  // Sends what it can of the outbox; whether there was anything to send. Caller holds
  // socket_mutex_ and mutex_.
  bool send_outbox();
  void queue_hello();  // Hello + Credit(free slots); caller holds mutex_
  // Straight to the socket, skipping the outbox; caller holds socket_mutex_ and mutex_.
  void send_heartbeat();
  void queue_credit(std::uint32_t credits);  // caller holds mutex_
  // Ack(work_id) with the credit of the slot it frees; caller holds mutex_.
  void queue_ack(std::uint64_t work_id);
  // Error carrying the Ack (credit 1) for work refused unopened; caller holds mutex_.
  void queue_refusal(std::uint64_t work_id, const std::string& message);
  // `fill` gets the envelope's body; `ack`, when non-zero, is the work id the envelope also acks.
  zmq::message_t encode_control(const std::function<void(schema::Envelope::Body::Builder)>& fill,
                                std::uint64_t ack = 0) const;
  // encode_control() onto the end of the outbox; caller holds mutex_.
  void queue_control(const std::function<void(schema::Envelope::Body::Builder)>& fill,
                     std::uint64_t ack = 0);
  // Waits up to `timeout` for room in the outbox: Unavailable when none came, Aborted once
  // closing. `lock` holds mutex_.
  Status wait_for_outbox_room(std::unique_lock<std::mutex>& lock,
                              std::chrono::milliseconds timeout);

  WorkerOptions options_;
  zmq::context_t context_;
  Wakeup wakeup_;  // pokes whichever thread sleeps on the socket (the role's holder)

  std::mutex socket_mutex_;     // taken before mutex_ when both are held
  zmq::socket_t dealer_;        // guarded by socket_mutex_
  int socket_fd_ = -1;          // ZeroMQ's descriptor for dealer_; set before any thread starts
  bool socket_closed_ = false;  // guarded by socket_mutex_
  bool poller_asleep_ = false;  // guarded by socket_mutex_: the holder sleeps on socket_fd_

  mutable std::mutex mutex_;
  std::condition_variable inbox_ready_;
  std::condition_variable outbox_not_full_;
  std::condition_variable background_wake_;
  PollerRole role_;                                    // guarded by mutex_
  std::deque<wire::Decoded<schema::Envelope>> inbox_;  // guarded by mutex_
  std::deque<zmq::message_t> outbox_;                  // guarded by mutex_: frames to send
  std::set<std::uint64_t> held_;                       // guarded by mutex_
  WorkerStats counters_;                               // guarded by mutex_
  bool closing_ = false;                               // guarded by mutex_
  TimePoint last_from_learner_;                        // guarded by mutex_
  TimePoint last_hello_;                               // guarded by mutex_
  TimePoint last_heartbeat_;                           // background thread only
  std::thread thread_;
};

}  // namespace dice::transport
