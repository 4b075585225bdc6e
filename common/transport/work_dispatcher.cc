#include "common/transport/work_dispatcher.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/transport/zmq_frames.h"

namespace dice::transport {
namespace {

// Messages received per wake-up before the loop looks at timers and sends again.
constexpr std::size_t kMaxReceivesPerRound = 256;

}  // namespace

WorkDispatcher::WorkDispatcher(DispatcherOptions options)
    : options_(options),
      context_(1),
      router_(context_, zmq::socket_type::router),
      state_(std::move(options)) {}

Result<std::unique_ptr<WorkDispatcher>> WorkDispatcher::start(DispatcherOptions options) {
  if (options.heartbeat_interval_ms <= 0 || options.misses_before_dead <= 0) {
    return Status::invalid_argument(
        "transport: heartbeat_interval_ms and misses_before_dead "
        "must be positive");
  }
  std::unique_ptr<WorkDispatcher> dispatcher(new WorkDispatcher(options));
  try {
    dispatcher->router_.set(zmq::sockopt::linger, 0);
    // Sends to a vanished peer fail with EHOSTUNREACH instead of vanishing silently.
    dispatcher->router_.set(zmq::sockopt::router_mandatory, 1);
    dispatcher->router_.bind(options.bind_endpoint);
    dispatcher->endpoint_ = dispatcher->router_.get(zmq::sockopt::last_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::io_error("transport: cannot bind learner socket to '" + options.bind_endpoint +
                            "': " + e.what());
  }
  DICE_LOG(Info) << "learner transport listening" << kv("endpoint", dispatcher->endpoint_);
  dispatcher->thread_ = std::thread([d = dispatcher.get()] { d->run(); });
  return dispatcher;
}

WorkDispatcher::~WorkDispatcher() {
  close();
}

void WorkDispatcher::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wakeup_.notify();
  queue_not_full_.notify_all();
  result_ready_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status WorkDispatcher::submit(WorkItem item, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool room =
      queue_not_full_.wait_for(lock, timeout, [&] { return closing_ || !state_.queue_full(); });
  if (closing_) return Status::aborted("transport: dispatcher closed");
  if (!room) {
    return Status::unavailable("transport: work queue full (" +
                               std::to_string(options_.queue_capacity) + " items) for " +
                               std::to_string(timeout.count()) + " ms");
  }
  DICE_RETURN_IF_ERROR(state_.add_work(std::move(item)));
  // Dispatch now if a worker has a credit; the send happens on this thread.
  state_.tick(Clock::now());
  lock.unlock();
  flush_and_wake();
  return Status::ok_status();
}

Result<WorkResult> WorkDispatcher::next_result(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  result_ready_.wait_for(lock, timeout, [&] { return closing_ || state_.has_result(); });
  if (state_.has_result()) {
    const bool dispatch_paused = state_.results_full();
    WorkResult result = state_.pop_result();
    if (dispatch_paused) {
      state_.tick(Clock::now());  // the room just made lets work go out again
      const bool queue_room = !state_.queue_full();
      lock.unlock();
      if (queue_room) queue_not_full_.notify_all();
      flush_and_wake();
    }
    return result;
  }
  if (closing_) return Status::aborted("transport: dispatcher closed");
  return Status::timeout("transport: no result within " + std::to_string(timeout.count()) + " ms");
}

Status WorkDispatcher::broadcast(std::string payload) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return Status::aborted("transport: dispatcher closed");
    state_.broadcast(payload);
  }
  flush_and_wake();
  return Status::ok_status();
}

DispatcherStats WorkDispatcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.stats(Clock::now());
}

bool WorkDispatcher::flush() {
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  if (socket_closed_) return false;
  std::vector<Outbound> outbox;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    outbox = state_.take_outbox();
  }
  // No socket operation, no edge consumed: nothing to re-check (each check is a system call).
  if (outbox.empty()) return false;
  // In the order taken: whoever takes the outbox holds socket_mutex_ until it is sent.
  for (const Outbound& out : outbox) {
    const SendOutcome outcome = send_frames(router_, out.routing_id, out.payload);
    if (outcome == SendOutcome::kSent) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    state_.send_failed(out, outcome == SendOutcome::kUnreachable);
  }
  return has_input(router_);
}

void WorkDispatcher::flush_and_wake() {
  if (flush()) wakeup_.notify();
}

bool WorkDispatcher::receive_all() {
  std::vector<std::vector<zmq::message_t>> messages;
  {
    std::lock_guard<std::mutex> socket_lock(socket_mutex_);
    if (socket_closed_) return false;
    std::vector<zmq::message_t> frames;
    while (receive_frames(router_, &frames)) {
      messages.push_back(std::move(frames));
      if (messages.size() == kMaxReceivesPerRound) break;
    }
  }
  // At the cap, more may wait behind an edge already consumed; below it the last receive found
  // the socket empty, which re-arms the edge.
  const bool more = messages.size() == kMaxReceivesPerRound;
  if (messages.empty()) return more;
  // Decoding (the expensive part) happens outside the lock, then the state takes the lot at once.
  struct Received {
    std::string routing_id;
    Result<wire::Decoded<schema::Envelope>> envelope;
  };
  std::vector<Received> received;
  received.reserve(messages.size());
  for (auto& frames : messages) {
    // A ROUTER prepends the sender's routing id: [routing id, envelope].
    std::string routing_id = frame_string(frames[0]);
    if (frames.size() != 2) {
      received.push_back(
          {std::move(routing_id), Status::corruption("expected 1 frame after the routing id, got " +
                                                     std::to_string(frames.size() - 1))});
      continue;
    }
    received.push_back({std::move(routing_id), decode_frame(std::move(frames[1]))});
  }
  const TimePoint now = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  for (Received& r : received) {
    if (!r.envelope.ok()) {
      state_.handle_malformed(r.routing_id, r.envelope.status());
    } else {
      state_.handle(r.routing_id, std::move(r.envelope).value(), now);
    }
  }
  return more;
}

void WorkDispatcher::run() {
  const int poll_ms = std::clamp(options_.heartbeat_interval_ms / 4, 1, 250);
  int socket_fd = -1;
  {
    std::lock_guard<std::mutex> socket_lock(socket_mutex_);
    socket_fd = router_.get(zmq::sockopt::fd);
  }
  while (true) {
    const bool more = receive_all();
    bool results = false;
    bool queue_room = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) break;
      state_.tick(Clock::now());
      results = state_.has_result();
      queue_room = !state_.queue_full();
    }
    const bool input_waiting = flush() || more;
    // Waiters are woken only now, after the locks are free: woken earlier, a consumer that goes
    // straight on to submit() would only queue behind this loop for socket_mutex_.
    if (results) result_ready_.notify_all();
    if (queue_room) queue_not_full_.notify_all();
    // The descriptor only signals new edges: sleep on it only when nothing is waiting now.
    if (input_waiting) continue;
    wakeup_.wait(socket_fd, poll_ms);
  }
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  router_.close();
  socket_closed_ = true;
}

}  // namespace dice::transport
