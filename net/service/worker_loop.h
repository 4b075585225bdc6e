// The loop every worker service (dice-rollout, dice-reward) runs around its own work:
//
//   connect to the learner (WorkerConnection) -> serve /metrics -> take work items and run each on
//   one of `capacity` threads with the service's handler -> queue what the handler produces ->
//   finish the item (one Ack carrying the freed credit) -> on SIGTERM, or a Shutdown message from
//   the learner, take no more work, finish what is in hand (up to the drain timeout), exit 0.
//
// A Cancel from the learner (its answer is no longer wanted) drops the item if no handler has
// taken it yet, and otherwise cancels the handler's ResultSink::cancellation(): the handler stops
// as early as it can, whatever it still sends is dropped, and the item is finished with an Ack
// alone. Cancels that come while draining are not acted on: the items in hand run to their end.
//
// A handler that throws or returns an error does not take the process down: the learner gets an
// Error envelope for that work id and the item is finished, so it is not re-dispatched forever.
#pragma once

#include <capnp/message.h>

#include <chrono>
#include <functional>
#include <string>

#include "common/cancellation.h"
#include "common/status.h"
#include "net/service/metrics_registry.h"
#include "net/service/metrics_server.h"
#include "net/service/service_flags.h"
#include "net/service/shutdown_signal.h"
#include "net/transport/transport_options.h"
#include "net/wire/envelope.h"

namespace dice::service {

// Where a handler's results go. Envelopes are stamped with the worker's id and run id.
class ResultSink {
 public:
  virtual ~ResultSink() = default;
  virtual schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message) = 0;
  // Encodes `message` (an Envelope built with init_envelope) and queues it for the learner.
  virtual Status send(capnp::MessageBuilder& message) = 0;
  // send() for the work item's last result: the worker loop's sink also ends the item with it
  // (the Ack rides on the result: one message to the learner instead of two). Nothing may be
  // sent for the item afterwards. Default: send().
  virtual Status send_last(capnp::MessageBuilder& message) { return send(message); }
  // Set when the learner cancels the work item being handled; null where there is no item (a
  // control message's replies). A handler checks it between its steps and registers what it
  // cannot check from inside (a sandboxed run to kill); once it is set, what the handler sends is
  // dropped and the item ends with an Ack alone.
  virtual Cancellation* cancellation() { return nullptr; }
};

// Runs one work item (a RolloutRequest or EvalRequest envelope). May be called on several threads
// at once. An error Status goes back to the learner as an Error envelope.
using WorkHandler =
    std::function<Status(const wire::Decoded<schema::Envelope>& work, ResultSink& sink)>;
// A WeightsUpdate (the only other message a worker acts on); called on the loop's thread.
using ControlHandler = std::function<void(const wire::Decoded<schema::Envelope>& message)>;
// The same, able to answer the learner (an Error about no work item, work id 0) through `sink`.
using ControlReplyHandler =
    std::function<void(const wire::Decoded<schema::Envelope>& message, ResultSink& sink)>;

struct WorkerLoopOptions {
  // The learner endpoint, worker id, role, capacity (= handler threads) and heartbeats.
  transport::WorkerOptions transport;
  // Where /metrics is served; the endpoint goes into Hello. Port 0 picks a free one.
  MetricsServerOptions metrics;
  // Longest wait for items in hand after a shutdown request. Default: 600000
  std::chrono::milliseconds drain_timeout{600000};
  // Longest wait to queue one result while the learner is away. Default: 60000
  std::chrono::milliseconds send_timeout{60000};
};

// The options of worker `role` from its service context: the learner endpoint from
// cluster.learner (host:port; port 0 is refused, a worker must know where to connect), worker id
// "<host>/<role>/<index>", heartbeats from cluster.heartbeat, the run id, and /metrics on
// --metrics-port (else any free port) at the worker's bind address (transport_security.h), and
// CURVE keys where the run has them. `capacity` is the number of handler
// threads and credits.
Result<WorkerLoopOptions> worker_loop_options(const ServiceContext& context, schema::Role role,
                                              std::uint32_t capacity);

// Counters the loop keeps in `registry` (prefix dice_worker_): work received, finished and failed,
// items in hand, and the transport's queue depths (refreshed on each scrape).
// Returns the process exit code: 0 after a drain, 1 when start-up failed (logged).
int run_worker_loop(const WorkerLoopOptions& options, MetricsRegistry& registry,
                    ShutdownSignal& shutdown, const WorkHandler& handle_work,
                    const ControlHandler& handle_control);
// The same with a control handler that may answer the learner (a separate name: nullptr would
// make an overload ambiguous).
int run_worker_loop_with_replies(const WorkerLoopOptions& options, MetricsRegistry& registry,
                                 ShutdownSignal& shutdown, const WorkHandler& handle_work,
                                 const ControlReplyHandler& handle_control);

}  // namespace dice::service
