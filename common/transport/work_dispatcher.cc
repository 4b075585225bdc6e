#include "common/transport/work_dispatcher.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/transport/zmq_frames.h"

namespace dice::transport {
namespace {

// Messages handled per wake-up before the loop looks at timers and sends again.
constexpr int kMaxReceivesPerRound = 256;

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
  lock.unlock();
  wakeup_.notify();
  return Status::ok_status();
}

Result<WorkResult> WorkDispatcher::next_result(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  result_ready_.wait_for(lock, timeout, [&] { return closing_ || state_.has_result(); });
  if (state_.has_result()) {
    WorkResult result = state_.pop_result();
    lock.unlock();
    wakeup_.notify();  // a full result queue may have paused dispatch
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
  wakeup_.notify();
  return Status::ok_status();
}

DispatcherStats WorkDispatcher::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_.stats(Clock::now());
}

void WorkDispatcher::receive_all(TimePoint now) {
  std::vector<zmq::message_t> frames;
  for (int i = 0; i < kMaxReceivesPerRound && receive_frames(router_, &frames); ++i) {
    // A ROUTER prepends the sender's routing id: [routing id, envelope].
    const std::string routing_id = frame_string(frames[0]);
    if (frames.size() != 2) {
      std::lock_guard<std::mutex> lock(mutex_);
      state_.handle_malformed(routing_id, Status::corruption("expected 1 frame after the routing "
                                                             "id, got " +
                                                             std::to_string(frames.size() - 1)));
      continue;
    }
    // Decoding (the expensive part) happens outside the lock.
    auto decoded = wire::decode_envelope(frames[1].to_string_view());
    std::lock_guard<std::mutex> lock(mutex_);
    if (!decoded.ok()) {
      state_.handle_malformed(routing_id, decoded.status());
    } else {
      state_.handle(routing_id, std::move(decoded).value(), now);
    }
  }
}

void WorkDispatcher::run() {
  const long poll_ms = std::clamp(options_.heartbeat_interval_ms / 4, 1, 250);
  zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, wakeup_.fd(), ZMQ_POLLIN, 0}};
  while (true) {
    try {
      zmq::poll(items, 2, std::chrono::milliseconds(poll_ms));
    } catch (const zmq::error_t& e) {
      if (e.num() != EINTR) {
        DICE_LOG(Error) << "transport poll failed" << kv("error", e.what());
      }
    }
    if (items[1].revents & ZMQ_POLLIN) wakeup_.drain();
    receive_all(Clock::now());

    std::vector<Outbound> outbox;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (closing_) break;
      state_.tick(Clock::now());
      outbox = state_.take_outbox();
      if (state_.has_result()) result_ready_.notify_all();
      if (!state_.queue_full()) queue_not_full_.notify_all();
    }
    for (const Outbound& out : outbox) {
      const SendOutcome outcome = send_frames(router_, out.routing_id, out.payload);
      if (outcome == SendOutcome::kSent) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      state_.send_failed(out, outcome == SendOutcome::kUnreachable);
    }
  }
  router_.close();
}

}  // namespace dice::transport
