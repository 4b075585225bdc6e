// The learner-side dispatch state machine, without sockets or threads: what WorkDispatcher's
// threads (whichever reads the socket, and the timer thread) feed with received envelopes and
// clock ticks, and drain of frames to send. Time comes in as an argument, so tests drive it with a
// fake clock.
//
// Protocol (learner <-> worker; every message is one Envelope):
//   worker: Hello, then Credit(n)      -> registered; n more work items may be sent to it
//   learner: work envelope             -> only to a worker with a credit (one credit spent)
//   worker: Candidate/Verdict/Error... -> results, each delivered once per (work id, part)
//   worker: Ack(work id, credits 1)    -> item complete, its slot free again; later copies of
//                                         the ack are counted and dropped (their credit counts).
//                                         Usually not a message of its own: the item's last result
//                                         carries it (Envelope.ack), handled after that result
//   learner: Cancel(work id)           -> the item's answer is no longer wanted (cancel()): the
//                                         worker stops it and acks it; results still coming for
//                                         it are dropped (a worker sends none once it has seen
//                                         the Cancel)
//   both: Heartbeat every interval; a worker silent for misses x interval is dead: its items go
//   back to the front of the queue. A learner heartbeat names the worker it is addressed to; an
//   empty name means "I do not know you: send Hello" (after a learner restart or a dead verdict).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/status.h"
#include "net/transport/shared_payload.h"
#include "net/transport/transport_options.h"
#include "net/wire/envelope.h"

namespace dice::transport {

using Clock = std::chrono::steady_clock;
using TimePoint = Clock::time_point;

// One piece of work: an encoded Envelope whose body is a RolloutRequest or EvalRequest.
struct WorkItem {
  std::uint64_t work_id = 0;  // unique per item, never 0; the body carries the same id
  std::string payload;        // wire::encode() of the Envelope
  // Only workers whose Hello named this role get the item (rollout requests go to rollout
  // workers, eval requests to reward workers, over one socket). Empty: any worker.
  std::optional<schema::Role> role;
};

// A result from a worker: an Envelope whose body is a Candidate, Verdict or Error.
struct WorkResult {
  std::uint64_t work_id;
  std::string worker_id;
  wire::Decoded<schema::Envelope> envelope;
};

// A frame to send: payload to the worker behind routing_id.
struct Outbound {
  std::string routing_id;
  SharedPayload payload;      // never null
  std::uint64_t work_id = 0;  // non-zero when this carries a work item (re-queued if unsent)
};

// One registered worker as the learner sees it.
struct WorkerSnapshot {
  std::string worker_id;
  std::uint32_t credits = 0;
  std::size_t in_flight = 0;
  std::uint64_t completed = 0;
  std::int64_t silent_ms = 0;  // since its last message
};

// Queue depths and counters, for metrics. Counters only grow.
struct DispatcherStats {
  std::size_t pending = 0;               // work waiting for a worker with a credit
  std::size_t in_flight = 0;             // work sent and not yet acked
  std::size_t results_queued = 0;        // results waiting for next_result()
  std::size_t workers = 0;               // registered workers
  std::uint64_t credits = 0;             // credits held, all workers
  std::int64_t oldest_in_flight_ms = 0;  // age of the oldest item in flight
  std::uint64_t submitted = 0;
  std::uint64_t dispatched = 0;         // sends of work, re-sends included
  std::uint64_t completed = 0;          // items acked
  std::uint64_t results_delivered = 0;  // results handed to next_result()'s queue
  std::uint64_t duplicate_results = 0;  // results or acks for parts/items already done: dropped
  std::uint64_t unknown_results = 0;    // results for work never sent to that peer: dropped
  std::uint64_t requeued = 0;           // items sent back to the queue (dead worker, send failure)
  std::uint64_t given_up = 0;   // items answered by the dispatcher: lost their worker max_attempts
                                // times (lost_work_answer.h)
  std::uint64_t cancelled = 0;  // queued items withdrawn by cancel() before any dispatch
  // Items cancel() found at a worker: a Cancel went to it; the item stays in flight until the
  // worker acks it (its slot is busy until then), or is dropped if that worker is lost.
  std::uint64_t cancelled_in_flight = 0;
  std::uint64_t cancelled_results = 0;    // results of items cancelled in flight: dropped
  std::uint64_t workers_dead = 0;         // workers declared dead
  std::uint64_t malformed_frames = 0;     // undecodable frames, wrong frame counts: dropped
  std::uint64_t unexpected_messages = 0;  // decodable but wrong here (kind, sender): dropped
  std::uint64_t identity_refusals = 0;    // Hellos whose worker id or role is not their key's
  std::uint64_t send_failures = 0;
  std::uint64_t errors_received = 0;        // Error bodies from workers
  std::vector<WorkerSnapshot> worker_list;  // by worker id
};

class DispatcherState {
 public:
  explicit DispatcherState(DispatcherOptions options);

  // Queues work. InvalidArgument for work id 0 or a live/remembered id; Unavailable when the
  // queue is at capacity (WorkDispatcher waits on that).
  Status add_work(WorkItem item);
  bool queue_full() const { return pending_count_ >= options_.queue_capacity; }
  // `work_id`'s answer is no longer wanted (its group expired or was skipped). Queued, it is
  // withdrawn, so no worker slot spends time on it. Sent, its worker gets a Cancel (it stops the
  // item as early as it can and acks it, which frees the slot); from then on the item's results
  // are dropped, and a worker lost while holding it does not put it back in the queue. True when
  // it did either; false for an id unknown, completed, or cancelled already.
  bool cancel(std::uint64_t work_id);
  bool has_pending() const { return pending_count_ > 0; }

  // A decoded envelope from the peer behind routing_id; `key_name` names the CURVE key that
  // authenticated its connection (empty without CURVE).
  void handle(const std::string& routing_id, wire::Decoded<schema::Envelope> envelope,
              TimePoint now, const std::string& key_name = {});
  // A frame that did not decode or had the wrong shape; `why` goes to the log.
  void handle_malformed(const std::string& routing_id, const Status& why);
  // Heartbeats due, dead workers, dispatch.
  void tick(TimePoint now);
  // The frame `out` could not be sent; `unreachable`: the peer is gone (its worker is dead).
  void send_failed(const Outbound& out, bool unreachable);
  // Queues `payload` for every registered worker (WeightsUpdate, Shutdown).
  void broadcast(const std::string& payload);
  // broadcast() of a Shutdown: from now on a worker whose connection goes, or that falls silent,
  // has left as it was told to; that is logged at info ("worker left"), not as a worker declared
  // dead, and workers_dead does not count it.
  void broadcast_shutdown(const std::string& payload);

  std::vector<Outbound> take_outbox();
  // The same into `into` (emptied first), which keeps both buffers' capacity for the next flush.
  void take_outbox(std::vector<Outbound>* into);
  bool has_result() const { return !results_.empty(); }
  // No work is dispatched while this holds (see DispatcherOptions::result_capacity).
  bool results_full() const { return results_.size() >= options_.result_capacity; }
  WorkResult pop_result();

  DispatcherStats stats(TimePoint now) const;
  // The registered id behind a routing id, or "" (for logs and tests).
  std::string worker_for_routing(const std::string& routing_id) const;

 private:
  struct Worker {
    std::string worker_id;
    std::string routing_id;
    std::uint32_t credits = 0;
    std::set<std::uint64_t> in_flight;
    TimePoint last_seen;
    TimePoint last_heartbeat_sent;
    std::uint64_t completed = 0;
    schema::Role role = schema::Role::ROLLOUT;
  };
  struct Work {
    SharedPayload payload;  // shared with its sends: a re-dispatch or a send copies no bytes
    std::optional<schema::Role> role;
    std::string assignee;  // worker id, "" while queued
    TimePoint sent_at;
    std::set<std::uint32_t> parts_delivered;  // part keys already handed to results_
    std::set<std::string> sent_to;     // every worker this learner sent it to; only they answer
    std::vector<std::string> lost_on;  // the workers lost while they held it, in order
    // Losses while it was its worker's only item: the ones that blame it (max_attempts).
    std::uint32_t lone_losses = 0;
    // Lost at least once: sent only to a worker holding nothing, which then gets nothing else
    // until it answers, so a loss of it is a lone loss.
    bool isolated = false;
    bool cancelled = false;  // cancel() after it was sent: its answer is unwanted
  };

  void handle_hello(const std::string& routing_id, schema::Hello::Reader hello, TimePoint now,
                    const std::string& key_name);
  // handle() for a peer that did not say Hello, given the envelope's fused ack (if any).
  void handle_stranger(const std::string& routing_id, schema::Envelope::Body::Reader body,
                       bool fused_ack, std::uint64_t ack_work, std::uint32_t ack_credits);
  // handle() for a known worker, but for its fused ack; a result moves `envelope` to results_.
  void handle_worker_message(Worker& worker, const std::string& routing_id,
                             schema::Envelope::Body::Reader body,
                             wire::Decoded<schema::Envelope>& envelope);
  // `answered_as`: the role whose result the body is (a Candidate: rollout; a Verdict: reward).
  void handle_result(Worker& worker, std::uint64_t work_id, std::uint32_t part,
                     schema::Role answered_as, wire::Decoded<schema::Envelope> envelope);
  void handle_ack(Worker& worker, std::uint64_t work_id);
  void add_credits(Worker& worker, std::uint32_t credits);  // capped at max_credits_per_worker
  void declare_dead(const std::string& worker_id, const char* why);
  // Requeues what `worker` holds (it was lost), or gives up an item lost alone max_attempts
  // times. A worker lost with several items cannot say which one took it down: each is sent
  // again isolated, so an honest item beside a poison one is not spent by the poison's losses.
  void requeue_all(Worker& worker);
  // Completes `work_id` with lost_work_answer()'s result, unless that part was delivered already.
  void give_up(std::uint64_t work_id);
  void requeue(std::uint64_t work_id);
  // Forgets `work_id` unanswered (cancelled, and its worker is gone or never got it).
  void drop_cancelled(std::uint64_t work_id);
  void send_cancel(const Worker& worker, std::uint64_t work_id);
  void remember_completed(std::uint64_t work_id);
  void dispatch(TimePoint now);
  // The worker with a credit for `role` that should get the next item, or nullptr; for an
  // `isolated` item only a worker holding nothing. A worker holding an isolated item gets none.
  Worker* choose_worker(std::optional<schema::Role> role, bool isolated);
  bool holds_isolated(const Worker& worker) const;
  static int queue_key(std::optional<schema::Role> role) {
    return role ? static_cast<int>(*role) : -1;
  }
  void send_heartbeat(Worker& worker, const std::string& addressed_to, TimePoint now);
  void reply_unknown_peer(const std::string& routing_id);
  void count_unexpected(const std::string& routing_id, const char* what);
  void count_stray(std::uint64_t work_id, const std::string& from);

  DispatcherOptions options_;
  std::map<std::string, Worker> workers_;  // by worker id
  std::string last_chosen_;  // worker id that got the last dispatch (round-robin on ties)
  std::unordered_map<std::string, std::string> routing_to_id_;  // routing id -> worker id
  std::unordered_map<std::uint64_t, Work> work_;  // every item submitted and not completed
  // Queued ids, one queue per role the items ask for (-1: any role), so an item no worker can
  // take yet never holds up the others; ids no longer in work_ or already assigned are skipped.
  std::map<int, std::deque<std::uint64_t>> pending_;
  std::size_t pending_count_ = 0;  // live entries of all pending_ queues
  std::unordered_set<std::uint64_t> completed_;
  std::deque<std::uint64_t> completed_order_;
  std::deque<WorkResult> results_;
  std::vector<Outbound> outbox_;
  DispatcherStats counters_;
  bool workers_told_to_leave_ = false;  // broadcast_shutdown() was called
};

// Logs the 1st, 2nd, 4th, 8th... occurrence of a repeated problem, so a flood of bad frames
// cannot flood the log.
bool should_log_occurrence(std::uint64_t count);

}  // namespace dice::transport
