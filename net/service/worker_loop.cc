#include "net/service/worker_loop.h"

#include <unistd.h>

#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "common/log.h"
#include "net/service/transport_metrics.h"
#include "net/service/transport_security.h"
#include "net/service/work_queue.h"
#include "net/transport/worker_connection.h"

namespace dice::service {
namespace {

using Body = schema::Envelope::Body;
using std::chrono::milliseconds;

std::uint64_t work_id_of(const wire::Decoded<schema::Envelope>& envelope) {
  auto body = envelope.root().getBody();
  switch (body.which()) {
    case Body::ROLLOUT_REQUEST:
      return body.getRolloutRequest().getWorkId();
    case Body::EVAL_REQUEST:
      return body.getEvalRequest().getWorkId();
    default:
      return 0;
  }
}

class ConnectionSink : public ResultSink {
 public:
  ConnectionSink(transport::WorkerConnection& connection, milliseconds timeout)
      : connection_(connection), timeout_(timeout) {}
  schema::Envelope::Builder init_envelope(capnp::MessageBuilder& message) override {
    return connection_.init_envelope(message);
  }
  Status send(capnp::MessageBuilder& message) override {
    return connection_.send_result(wire::encode(message), timeout_);
  }

 protected:
  transport::WorkerConnection& connection_;
  milliseconds timeout_;
};

// One work item's sink: send_last() ends the item (WorkerConnection::finish with the result), so
// the loop finishes only the items whose handler did not. Once the item is cancelled, results are
// dropped and send_last() ends the item with an Ack alone.
class ItemSink : public ConnectionSink {
 public:
  ItemSink(transport::WorkerConnection& connection, milliseconds timeout, std::uint64_t work_id,
           std::shared_ptr<Cancellation> cancellation)
      : ConnectionSink(connection, timeout),
        work_id_(work_id),
        cancellation_(std::move(cancellation)) {}
  Status send(capnp::MessageBuilder& message) override {
    if (cancelled()) return Status::ok_status();  // nobody waits for it
    return ConnectionSink::send(message);
  }
  Status send_last(capnp::MessageBuilder& message) override {
    if (work_id_ == 0 || ended_) return send(message);  // no item to end (or ended already)
    Status sent = cancelled() ? connection_.finish(work_id_)
                              : connection_.finish(work_id_, message, timeout_);
    ended_ = sent.ok();
    return sent;
  }
  Cancellation* cancellation() override { return cancellation_.get(); }
  bool cancelled() const { return cancellation_ && cancellation_->cancelled(); }
  bool ended() const { return ended_; }

 private:
  std::uint64_t work_id_;
  std::shared_ptr<Cancellation> cancellation_;  // null: not cancellable
  bool ended_ = false;
};

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

// The loop's own metrics, labelled with the worker id.
struct WorkerMetrics {
  Counter* received = nullptr;
  Counter* finished = nullptr;
  Counter* failed = nullptr;
  Counter* cancelled = nullptr;
  Gauge* in_hand = nullptr;
};

// False when any of them cannot be registered.
bool register_worker_metrics(MetricsRegistry& registry, const std::string& worker_id,
                             WorkerMetrics* metrics) {
  auto counter = [&](const char* name, const char* help) {
    auto c = registry.counter(name, help, {{"worker", worker_id}});
    return c.ok() ? c.value() : nullptr;
  };
  metrics->received = counter("dice_worker_work_received_total", "Work items received.");
  metrics->finished = counter("dice_worker_work_finished_total", "Work items finished.");
  metrics->failed = counter("dice_worker_work_failed_total",
                            "Work items whose handler failed (answered with an Error).");
  metrics->cancelled = counter("dice_worker_work_cancelled_total",
                               "Work items the learner cancelled: dropped while queued, or "
                               "stopped while handled; each answered with an Ack alone.");
  auto in_hand_gauge = registry.gauge("dice_worker_work_in_hand", "Work items being handled.",
                                      {{"worker", worker_id}});
  metrics->in_hand = in_hand_gauge.ok() ? in_hand_gauge.value() : nullptr;
  return metrics->received && metrics->finished && metrics->failed && metrics->cancelled &&
         metrics->in_hand;
}

// Runs the handler on one item; a failure (returned or thrown) is logged, answered with an Error
// unless the handler already ended the item, and the item is finished if the handler did not. A
// cancelled item is finished with an Ack alone, whatever its handler returned.
void handle_item(const HeldItem& item, transport::WorkerConnection& connection,
                 milliseconds send_timeout, const WorkHandler& handle_work,
                 const WorkerMetrics& metrics) {
  const std::uint64_t work_id = item.work_id;
  ItemSink item_sink(connection, send_timeout, work_id, item.cancellation);
  Status status;
  try {
    status = handle_work(item.envelope, item_sink);
  } catch (const std::exception& e) {
    status = Status::internal(std::string("handler threw: ") + e.what());
  }
  if (item_sink.cancelled()) {
    metrics.cancelled->add();
    DICE_LOG(Info) << "work cancelled by the learner, stopped" << kv("work", work_id)
                   << kv("handler", status.ok() ? std::string("ok") : status.to_string());
    status = Status::ok_status();  // its failure too is an answer nobody waits for
  }
  if (!status.ok()) {
    metrics.failed->add();
    DICE_LOG(Warn) << "work failed" << kv("work", work_id) << kv("error", status.to_string())
                   << kv("after_last_result", item_sink.ended());
  }
  if (!status.ok() && !item_sink.ended()) {
    capnp::MallocMessageBuilder message;
    auto error = item_sink.init_envelope(message).getBody().initError();
    error.setWorkId(work_id);
    error.setMessage(status.to_string());
    Status sent = item_sink.send_last(message);
    if (!sent.ok()) {
      DICE_LOG(Warn) << "cannot send error" << kv("error", sent.to_string());
    }
  }
  if (!item_sink.ended()) {
    Status done = connection.finish(work_id);
    if (!done.ok()) {
      DICE_LOG(Warn) << "cannot finish work" << kv("error", done.to_string());
    }
  }
}

// One handler thread: handles items until the queue is closed and empty.
void run_handler_thread(WorkQueue& queue, transport::WorkerConnection& connection,
                        milliseconds send_timeout, const WorkHandler& handle_work,
                        const WorkerMetrics& metrics, std::atomic<int>& busy) {
  while (auto next = queue.pop()) {
    handle_item(*next, connection, send_timeout, handle_work, metrics);
    queue.done(next->work_id);
    metrics.finished->add();
    metrics.in_hand->add(-1);
    --busy;
  }
}

// The learner cancelled `work_id` (the connection passes on Cancels of items held only): one no
// handler has taken is finished at once, unanswered; a running one is stopped by its handler.
void cancel_item(std::uint64_t work_id, WorkQueue& queue, transport::WorkerConnection& connection,
                 const WorkerMetrics& metrics, std::atomic<int>& busy) {
  switch (queue.cancel(work_id)) {
    case WorkQueue::CancelOutcome::kDropped: {
      metrics.cancelled->add();
      metrics.in_hand->add(-1);
      --busy;
      DICE_LOG(Info) << "work cancelled by the learner before it started" << kv("work", work_id);
      Status done = connection.finish(work_id);
      if (!done.ok()) {
        DICE_LOG(Warn) << "cannot finish work" << kv("error", done.to_string());
      }
      break;
    }
    case WorkQueue::CancelOutcome::kStopping:
      DICE_LOG(Info) << "work cancelled by the learner while running; stopping it"
                     << kv("work", work_id);
      break;
    case WorkQueue::CancelOutcome::kNotHeld:  // finished since the connection passed it on
      break;
  }
}

// Receive until asked to stop. Work that arrives after that stays unanswered: the learner
// re-dispatches it once this worker is gone (at-least-once delivery).
void receive_until_shutdown(transport::WorkerConnection& connection, ShutdownSignal& shutdown,
                            WorkQueue& queue, const WorkerMetrics& metrics, std::atomic<int>& busy,
                            const ControlReplyHandler& handle_control, ResultSink& sink) {
  while (!shutdown.requested()) {
    auto message = connection.receive(milliseconds(200));
    if (!message.ok()) {
      if (message.status().code() == StatusCode::kAborted) break;
      continue;  // timeout
    }
    auto body = message->root().getBody();
    switch (body.which()) {
      case Body::ROLLOUT_REQUEST:
      case Body::EVAL_REQUEST: {
        metrics.received->add();
        metrics.in_hand->add(1);
        ++busy;
        const std::uint64_t work_id = work_id_of(*message);
        queue.push(work_id, std::move(message).value());
        break;
      }
      case Body::CANCEL:
        cancel_item(body.getCancel().getWorkId(), queue, connection, metrics, busy);
        break;
      case Body::SHUTDOWN:
        shutdown.request(std::string("the learner asked: ") +
                         body.getShutdown().getReason().cStr());
        break;
      default:
        if (handle_control) handle_control(*message, sink);
        break;
    }
  }
}

// Closes the queue, waits up to `drain_timeout` for the handlers, joins them, then gives the
// outbox a moment to empty. Exits the process if the handlers do not finish in time.
void drain(WorkQueue& queue, std::atomic<int>& busy, milliseconds drain_timeout,
           std::vector<std::thread>& threads, transport::WorkerConnection& connection) {
  DICE_LOG(Info) << "draining" << kv("in_hand", busy.load());
  queue.close();
  const auto deadline = std::chrono::steady_clock::now() + drain_timeout;
  while (busy.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(50));
  }
  if (busy.load() > 0) {
    // Handler threads cannot be interrupted; exit without joining them (the learner re-dispatches).
    DICE_LOG(Error) << "drain timed out; exiting with work in hand" << kv("in_hand", busy.load());
    std::_Exit(1);
  }
  for (auto& t : threads) t.join();
  // Give the last results and acks a moment to leave before the socket closes.
  const auto flush_deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (connection.stats().outbox > 0 && std::chrono::steady_clock::now() < flush_deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
}

}  // namespace

Result<WorkerLoopOptions> worker_loop_options(const ServiceContext& context, schema::Role role,
                                              std::uint32_t capacity) {
  const auto& cluster = context.config.cluster;
  if (cluster.learner.port == 0) {
    return Status::invalid_argument(
        "cluster.learner.port: 0 (any free port) cannot be used by a worker: it must know where "
        "the learner listens; set a port");
  }
  if (capacity == 0) return Status::invalid_argument("worker capacity must be at least 1");
  WorkerLoopOptions options;
  transport::WorkerOptions& t = options.transport;
  t.learner_endpoint = "tcp://" + cluster.learner.host + ":" + std::to_string(cluster.learner.port);
  t.node = host_name();
  t.worker_id = t.node + "/" + transport::role_name(role) + "/" +
                std::to_string(context.worker_index.value_or(0));
  t.role = role;
  t.capacity = capacity;
  t.run_id = context.config.run.id;
  transport::apply_cluster_settings(cluster, t);
  DICE_ASSIGN_OR_RETURN(t.curve, worker_curve(context, role));
  DICE_ASSIGN_OR_RETURN(options.metrics.host,
                        worker_bind_address(cluster, role, context.worker_index.value_or(0)));
  options.metrics.port = static_cast<std::uint16_t>(context.metrics_port.value_or(0));
  return options;
}

int run_worker_loop(const WorkerLoopOptions& options, MetricsRegistry& registry,
                    ShutdownSignal& shutdown, const WorkHandler& handle_work,
                    const ControlHandler& handle_control) {
  ControlReplyHandler with_sink;
  if (handle_control) {
    with_sink = [&](const wire::Decoded<schema::Envelope>& message, ResultSink&) {
      handle_control(message);
    };
  }
  return run_worker_loop_with_replies(options, registry, shutdown, handle_work, with_sink);
}

int run_worker_loop_with_replies(const WorkerLoopOptions& options, MetricsRegistry& registry,
                                 ShutdownSignal& shutdown, const WorkHandler& handle_work,
                                 const ControlReplyHandler& handle_control) {
  const std::string& worker_id = options.transport.worker_id;
  WorkerMetrics metrics;
  if (!register_worker_metrics(registry, worker_id, &metrics)) {
    DICE_LOG(Error) << "cannot register worker metrics";
    return 1;
  }

  // Metrics first, so Hello can carry the endpoint.
  transport::WorkerConnection* connection_for_scrape = nullptr;
  std::mutex scrape_mutex;
  MetricsServerOptions metrics_options = options.metrics;
  metrics_options.before_scrape = [&] {
    std::lock_guard<std::mutex> lock(scrape_mutex);
    if (connection_for_scrape == nullptr) return;
    export_worker_stats(connection_for_scrape->stats(), worker_id, "dice_worker_transport",
                        &registry)
        .ignore();
  };
  auto server = MetricsServer::start(metrics_options, &registry);
  if (!server.ok()) {
    DICE_LOG(Error) << "cannot serve /metrics" << kv("error", server.status().to_string());
    return 1;
  }
  transport::WorkerOptions transport_options = options.transport;
  transport_options.metrics_endpoint =
      "http://" + (*server)->host() + ":" + std::to_string((*server)->port()) + "/metrics";
  auto started = transport::WorkerConnection::start(transport_options);
  if (!started.ok()) {
    DICE_LOG(Error) << "cannot start the worker connection"
                    << kv("error", started.status().to_string());
    return 1;
  }
  transport::WorkerConnection& connection = **started;
  {
    std::lock_guard<std::mutex> lock(scrape_mutex);
    connection_for_scrape = &connection;
  }
  DICE_LOG(Info) << "worker started" << kv("learner", transport_options.learner_endpoint)
                 << kv("capacity", transport_options.capacity)
                 << kv("metrics", transport_options.metrics_endpoint);

  ConnectionSink sink(connection, options.send_timeout);
  WorkQueue queue;
  std::atomic<int> busy{0};
  std::vector<std::thread> threads;
  for (std::uint32_t i = 0; i < transport_options.capacity; ++i) {
    threads.emplace_back([&] {
      run_handler_thread(queue, connection, options.send_timeout, handle_work, metrics, busy);
    });
  }
  receive_until_shutdown(connection, shutdown, queue, metrics, busy, handle_control, sink);
  drain(queue, busy, options.drain_timeout, threads, connection);
  {
    std::lock_guard<std::mutex> lock(scrape_mutex);
    connection_for_scrape = nullptr;
  }
  connection.close();
  DICE_LOG(Info) << "worker stopped"
                 << kv("finished", static_cast<std::uint64_t>(metrics.finished->value()));
  return 0;
}

}  // namespace dice::service
