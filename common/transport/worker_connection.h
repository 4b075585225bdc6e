// A worker's side of the transport: a DEALER socket connected to the learner and one poll-loop
// thread. On start (and again whenever the learner seems to have forgotten it) it sends Hello and
// a Credit for its free slots; it heartbeats every interval; work and control messages from the
// learner queue up for receive(); results and acks queue up for the loop to send.
//
// The learner may restart: ZeroMQ reconnects the socket by itself, and this worker says Hello
// again when a learner heartbeat is not addressed to it (the new learner does not know it) or when
// the learner has been silent for misses_before_dead intervals.
//
// Threads: the loop receives, keeps time and heartbeats; send_result() and finish() send the
// outbox themselves, under socket_mutex_, instead of waking the loop to do it (one thread
// hand-off fewer per message; see has_input() in zmq_frames.h for how the loop still wakes for
// every message).
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
#include "common/transport/shared_payload.h"
#include "common/transport/transport_options.h"
#include "common/transport/wakeup.h"
#include "common/wire/envelope.h"

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
  // a WeightsUpdate or a Shutdown. Timeout when none came; Aborted after close().
  Result<wire::Decoded<schema::Envelope>> receive(std::chrono::milliseconds timeout);

  // Queues an encoded result envelope (Candidate, Verdict, Error with a work id). Waits up to
  // `timeout` while the outbox is full, then Unavailable; Aborted after close().
  Status send_result(std::string payload, std::chrono::milliseconds timeout);

  // The work item is done (all its results were queued before this call): sends an Ack that also
  // credits the freed slot. InvalidArgument for a work id this worker does not hold.
  Status finish(std::uint64_t work_id);

  // Builds an envelope stamped with this worker's id and run id, for send_result().
  schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message) const;

  WorkerStats stats() const;

  // Stops the loop and wakes every waiter; idempotent. Unsent frames are dropped.
  void close();

 private:
  explicit WorkerConnection(WorkerOptions options);
  void run();
  struct Received {
    std::size_t work = 0;  // messages added to the inbox (the caller wakes receivers)
    bool more = false;     // stopped at the round's limit: more may be waiting
  };
  // Receives what is waiting (up to a round's worth) and handles it.
  Received receive_all(std::chrono::steady_clock::time_point now);
  void handle(wire::Decoded<schema::Envelope> envelope, std::chrono::steady_clock::time_point now);
  // Sends the outbox, from any thread. Returns whether input waits on the socket (the sends may
  // have consumed the descriptor's edge for it).
  bool flush();
  // flush() for a thread other than the loop: wakes the loop if input waits.
  void flush_and_wake();
  // Sends what it can of the outbox; whether there was anything to send. Caller holds
  // socket_mutex_ and mutex_.
  bool send_outbox();
  void queue_hello();  // Hello + Credit(free slots); caller holds mutex_
  // Straight to the socket, skipping the outbox; caller holds socket_mutex_ and mutex_.
  void send_heartbeat();
  void queue_credit(std::uint32_t credits);  // caller holds mutex_
  // Ack(work_id) with the credit of the slot it frees; caller holds mutex_.
  void queue_ack(std::uint64_t work_id);
  // Error + Ack (credit 1) for work refused unopened; caller holds mutex_.
  void queue_refusal(std::uint64_t work_id, const std::string& message);
  std::string encode_control(
      const std::function<void(schema::Envelope::Body::Builder)>& fill) const;
  // encode_control() onto the end of the outbox; caller holds mutex_.
  void queue_control(const std::function<void(schema::Envelope::Body::Builder)>& fill);

  WorkerOptions options_;
  zmq::context_t context_;
  Wakeup wakeup_;

  std::mutex socket_mutex_;     // taken before mutex_ when both are held
  zmq::socket_t dealer_;        // guarded by socket_mutex_
  bool socket_closed_ = false;  // guarded by socket_mutex_

  mutable std::mutex mutex_;
  std::condition_variable inbox_ready_;
  std::condition_variable outbox_not_full_;
  std::deque<wire::Decoded<schema::Envelope>> inbox_;        // guarded by mutex_
  std::deque<SharedPayload> outbox_;                         // guarded by mutex_
  std::set<std::uint64_t> held_;                             // guarded by mutex_
  WorkerStats counters_;                                     // guarded by mutex_
  bool closing_ = false;                                     // guarded by mutex_
  std::chrono::steady_clock::time_point last_from_learner_;  // loop thread only
  std::chrono::steady_clock::time_point last_hello_;         // loop thread only
  std::chrono::steady_clock::time_point last_heartbeat_;     // loop thread only
  std::thread thread_;
};

}  // namespace dice::transport
