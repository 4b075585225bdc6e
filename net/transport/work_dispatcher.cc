#include "net/transport/work_dispatcher.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/thread_name.h"
#include "net/transport/zmq_frames.h"

namespace dice::transport {
namespace {

// The name of the CURVE key that authenticated the connection `frame` came on (ZapHandler's
// user id), or "" when there is none.
std::string peer_key_name(zmq::message_t& frame) {
  const char* user = zmq_msg_gets(frame.handle(), "User-Id");
  return user == nullptr ? std::string() : std::string(user);
}

}  // namespace

WorkDispatcher::WorkDispatcher(DispatcherOptions options)
    : options_(options),
      context_(1),
      wakeup_(options_.poll_spin_us),
      router_(context_, zmq::socket_type::router),
      state_(std::move(options)),
      role_(kPollerGrace) {}

Result<std::unique_ptr<WorkDispatcher>> WorkDispatcher::start(DispatcherOptions options) {
  if (options.heartbeat_interval_ms <= 0 || options.misses_before_dead <= 0) {
    return Status::invalid_argument(
        "transport: heartbeat_interval_ms and misses_before_dead "
        "must be positive");
  }
  std::unique_ptr<WorkDispatcher> dispatcher(new WorkDispatcher(options));
  if (options.curve.on()) {
    // The authenticator must serve before the socket can take a connection.
    auto zap = ZapHandler::start(dispatcher->context_, options.curve.client_keys);
    if (!zap.ok()) return zap.status();
    dispatcher->zap_ = std::move(zap).value();
  }
  try {
    dispatcher->router_.set(zmq::sockopt::linger, 0);
    if (options.curve.on()) {
      dispatcher->router_.set(zmq::sockopt::curve_server, true);
      dispatcher->router_.set(zmq::sockopt::curve_secretkey, options.curve.secret_key);
      dispatcher->router_.set(zmq::sockopt::zap_domain, "dice");
    }
    if (options.bind_endpoint.find('[') != std::string::npos) {
      dispatcher->router_.set(zmq::sockopt::ipv6, true);
    }
    // Sends to a vanished peer fail with EHOSTUNREACH instead of vanishing silently.
    dispatcher->router_.set(zmq::sockopt::router_mandatory, 1);
    dispatcher->router_.bind(options.bind_endpoint);
    dispatcher->endpoint_ = dispatcher->router_.get(zmq::sockopt::last_endpoint);
    dispatcher->socket_fd_ = dispatcher->router_.get(zmq::sockopt::fd);
  } catch (const zmq::error_t& e) {
    return Status::io_error("transport: cannot bind learner socket to '" + options.bind_endpoint +
                            "': " + e.what());
  }
  DICE_LOG(Info) << "learner transport listening" << kv("endpoint", dispatcher->endpoint_)
                 << kv("curve", options.curve.on() ? "on" : "off")
                 << kv("keys", options.curve.client_keys.size());
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
  wakeup_.notify();  // a consumer asleep on the socket
  queue_not_full_.notify_all();
  result_ready_.notify_all();
  background_wake_.notify_all();
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
  // No credit yet: the ack that brings one has likely arrived while the consumer was handling
  // results, unread. Read it now, or the work waits until next_result() finds nothing queued.
  if (state_.has_pending() && role_.take_for_consumer()) {
    consumer_round(lock, Clock::now(), /*sleep=*/false, kMaxReceivesPerRound);
  }
  lock.unlock();
  flush_and_wake();
  return Status::ok_status();
}

Result<WorkResult> WorkDispatcher::next_result(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  bool socket_had_more = false;  // the last round took a message off the socket
  std::size_t rounds_past_deadline = 0;
  for (bool first = true;; first = false) {
    if (state_.has_result()) {
      const bool dispatch_paused = state_.results_full();
      WorkResult result = state_.pop_result();
      // Another consumer takes the next one (or the role, if it waits for the socket).
      if (role_.consumers_waiting() > 0) result_ready_.notify_one();
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
    // A zero timeout still reads what waits on the socket (a message a round, up to a round's
    // worth of the background thread).
    if (!first && Clock::now() >= deadline &&
        (!socket_had_more || ++rounds_past_deadline > kMaxReceivesPerRound)) {
      break;
    }
    if (role_.take_for_consumer()) {
      socket_had_more =
          consumer_round(lock, deadline, /*sleep=*/true, kConsumerRoundMessages).messages > 0;
      continue;
    }
    socket_had_more = false;
    role_.consumer_waits();
    result_ready_.wait_until(lock, deadline);
    role_.consumer_done_waiting();
  }
  return Status::timeout("transport: no result within " + std::to_string(timeout.count()) + " ms");
}

std::size_t WorkDispatcher::cancel(const std::vector<std::uint64_t>& work_ids) {
  std::size_t cancelled = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::uint64_t id : work_ids) cancelled += state_.cancel(id);
  }
  if (cancelled > 0) {
    queue_not_full_.notify_all();
    flush_and_wake();  // the Cancels of items at workers
  }
  return cancelled;
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

Status WorkDispatcher::broadcast_shutdown(std::string payload) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return Status::aborted("transport: dispatcher closed");
    state_.broadcast_shutdown(payload);
  }
  flush_and_wake();
  return Status::ok_status();
}

DispatcherStats WorkDispatcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.stats(Clock::now());
}

void WorkDispatcher::wake_sleeper_if_input() {
  // Only a thread asleep on the descriptor can miss the edge; a poller not yet asleep drains the
  // socket (re-arming the edge) before it sleeps.
  if (poller_asleep_ && has_input(router_)) wakeup_.notify();
}

void WorkDispatcher::flush_and_wake() {
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  if (socket_closed_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    state_.take_outbox(&sending_);
  }
  // No socket operation, no edge consumed: nothing to re-check (each check is a system call).
  if (sending_.empty()) return;
  // In the order taken: whoever takes the outbox holds socket_mutex_ until it is sent.
  for (const Outbound& out : sending_) {
    const SendOutcome outcome = send_frames(router_, out.routing_id, out.payload);
    if (outcome == SendOutcome::kSent) continue;
    std::lock_guard<std::mutex> lock(mutex_);
    state_.send_failed(out, outcome == SendOutcome::kUnreachable);
  }
  sending_.clear();  // drops the payload references now, keeps the capacity
  wake_sleeper_if_input();
}

WorkDispatcher::Received WorkDispatcher::receive_all(bool arm, std::size_t max_messages) {
  std::vector<std::vector<zmq::message_t>> messages;
  Received got;
  {
    std::lock_guard<std::mutex> socket_lock(socket_mutex_);
    if (socket_closed_) return got;
    messages = receive_round(router_, max_messages);
    // An empty round re-armed the descriptor's edge; a sender from here on checks for input on
    // the sleeper's behalf.
    if (messages.empty() && arm) poller_asleep_ = got.armed = true;
  }
  // At the cap, more may wait behind an edge already consumed.
  got.more = messages.size() == max_messages;
  got.messages = messages.size();
  if (messages.empty()) return got;
  // Decoding (the expensive part) happens outside the lock, then the state takes the lot at once.
  struct Received {
    std::string routing_id;
    std::string key_name;  // the connection's CURVE key name; empty without CURVE
    Result<wire::Decoded<schema::Envelope>> envelope;
  };
  std::vector<Received> received;
  received.reserve(messages.size());
  for (auto& frames : messages) {
    // A ROUTER prepends the sender's routing id: [routing id, envelope].
    std::string routing_id = frame_string(frames[0]);
    std::string key_name = options_.curve.on() ? peer_key_name(frames.back()) : std::string();
    if (frames.size() != 2) {
      received.push_back({std::move(routing_id), std::move(key_name),
                          Status::corruption("expected 1 frame after the routing id, got " +
                                             std::to_string(frames.size() - 1))});
      continue;
    }
    received.push_back(
        {std::move(routing_id), std::move(key_name), decode_frame(std::move(frames[1]))});
  }
  const TimePoint now = Clock::now();
  std::lock_guard<std::mutex> lock(mutex_);
  for (Received& r : received) {
    if (!r.envelope.ok()) {
      state_.handle_malformed(r.routing_id, r.envelope.status());
    } else {
      state_.handle(r.routing_id, std::move(r.envelope).value(), now, r.key_name);
    }
  }
  // Credits and acks that came in let queued work go out (sent by the caller).
  state_.tick(now);
  return got;
}

WorkDispatcher::Received WorkDispatcher::consumer_round(std::unique_lock<std::mutex>& lock,
                                                        TimePoint until, bool sleep,
                                                        std::size_t max_messages) {
  lock.unlock();
  const Received received = poll_once(until, sleep, max_messages);
  lock.lock();
  const bool wake_background = role_.release_by_consumer(Clock::now());
  if (wake_background || closing_) background_wake_.notify_one();
  if (role_.consumers_waiting() > 0) result_ready_.notify_one();
  return received;
}

WorkDispatcher::Received WorkDispatcher::poll_once(TimePoint until, bool sleep,
                                                   std::size_t max_messages) {
  const Received received = receive_all(/*arm=*/sleep, max_messages);
  if (received.messages > 0) {
    bool queue_room = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_room = !state_.queue_full();
    }
    flush_and_wake();
    // Submitters are woken only now, after the locks are free: woken earlier, one would only
    // queue behind this thread for socket_mutex_.
    if (queue_room) queue_not_full_.notify_all();
  }
  if (!received.armed) return received;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - Clock::now());
  wakeup_.wait(socket_fd_, static_cast<int>(std::max<std::int64_t>(0, wait.count())));
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  poller_asleep_ = false;
  return received;
}

bool WorkDispatcher::run_timers(TimePoint now) {
  bool queue_room = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return false;
    state_.tick(now);
    queue_room = !state_.queue_full();
  }
  flush_and_wake();
  if (queue_room) queue_not_full_.notify_all();
  return true;
}

void WorkDispatcher::run() {
  set_current_thread_name("dice/dispatch");
  const auto tick =
      std::chrono::milliseconds(std::clamp(options_.heartbeat_interval_ms / 4, 1, 250));
  run_background_loop(
      role_, mutex_, closing_, background_wake_, result_ready_, tick,
      [this](TimePoint now) { return run_timers(now); },
      [this](TimePoint until) {
        poll_once(until, /*sleep=*/true, kMaxReceivesPerRound);
        std::lock_guard<std::mutex> lock(mutex_);
        return state_.has_result();
      });
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  router_.close();
  socket_closed_ = true;
}

}  // namespace dice::transport
