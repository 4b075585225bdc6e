#include "net/transport/worker_connection.h"

#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/thread_name.h"
#include "net/transport/dispatcher_state.h"
#include "net/transport/zmq_frames.h"

namespace dice::transport {
namespace {

using Body = schema::Envelope::Body;
using SteadyClock = std::chrono::steady_clock;

// First segment of a control message (Hello, Credit, Ack, Heartbeat, Error), on the stack: an Ack
// is about 20 words, where Cap'n Proto's default segment would allocate and zero 8 KiB per
// message. A larger message (a Hello with many GPU slots) spills into allocated segments.
constexpr unsigned kControlMessageWords = 64;

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

WorkerConnection::WorkerConnection(WorkerOptions options)
    : options_(std::move(options)),
      context_(1),
      wakeup_(options_.poll_spin_us),
      dealer_(context_, zmq::socket_type::dealer),
      role_(kPollerGrace) {}

Result<std::unique_ptr<WorkerConnection>> WorkerConnection::start(WorkerOptions options) {
  if (options.learner_endpoint.empty()) {
    return Status::invalid_argument("transport: worker needs learner_endpoint");
  }
  if (options.worker_id.empty())
    return Status::invalid_argument("transport: worker needs worker_id");
  if (options.capacity == 0) {
    return Status::invalid_argument("transport: worker '" + options.worker_id +
                                    "': capacity must be at least 1");
  }
  if (options.heartbeat_interval_ms <= 0 || options.misses_before_dead <= 0) {
    return Status::invalid_argument(
        "transport: heartbeat_interval_ms and misses_before_dead "
        "must be positive");
  }
  if (options.node.empty()) options.node = host_name();
  std::unique_ptr<WorkerConnection> connection(new WorkerConnection(std::move(options)));
  const WorkerOptions& o = connection->options_;
  try {
    connection->dealer_.set(zmq::sockopt::linger, 0);
    if (o.curve.on()) {
      connection->dealer_.set(zmq::sockopt::curve_serverkey, o.curve.server_key);
      connection->dealer_.set(zmq::sockopt::curve_publickey, o.curve.public_key);
      connection->dealer_.set(zmq::sockopt::curve_secretkey, o.curve.secret_key);
    }
    connection->dealer_.connect(o.learner_endpoint);
    connection->socket_fd_ = connection->dealer_.get(zmq::sockopt::fd);
  } catch (const zmq::error_t& e) {
    return Status::invalid_argument("transport: worker '" + o.worker_id + "' cannot connect to '" +
                                    o.learner_endpoint + "': " + e.what());
  }
  const auto now = SteadyClock::now();
  connection->last_heartbeat_ = now;
  {
    std::lock_guard<std::mutex> lock(connection->mutex_);
    connection->last_from_learner_ = now;
    connection->queue_hello();
    connection->last_hello_ = now;
  }
  connection->thread_ = std::thread([c = connection.get()] { c->run(); });
  return connection;
}

WorkerConnection::~WorkerConnection() {
  close();
}

void WorkerConnection::close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wakeup_.notify();  // a consumer asleep on the socket
  inbox_ready_.notify_all();
  outbox_not_full_.notify_all();
  background_wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

schema::Envelope::Builder WorkerConnection::init_envelope(capnp::MessageBuilder& message) const {
  return wire::init_envelope(message, options_.worker_id, options_.run_id);
}

zmq::message_t WorkerConnection::encode_control(
    const std::function<void(schema::Envelope::Body::Builder)>& fill, std::uint64_t ack) const {
  capnp::word first_segment[kControlMessageWords] = {};  // the builder needs it zeroed
  capnp::MallocMessageBuilder message(kj::arrayPtr(first_segment, kControlMessageWords));
  auto envelope = init_envelope(message);
  fill(envelope.getBody());
  if (ack != 0) {
    envelope.initAck().setWorkId(ack);
    envelope.getAck().setCredits(1);
  }
  return encode_frame(message);
}

void WorkerConnection::queue_control(
    const std::function<void(schema::Envelope::Body::Builder)>& fill, std::uint64_t ack) {
  outbox_.push_back(encode_control(fill, ack));
}

void WorkerConnection::queue_hello() {
  const auto free_slots = static_cast<std::uint32_t>(
      options_.capacity - std::min<std::size_t>(options_.capacity, held_.size()));
  queue_control([&](Body::Builder body) {
    auto hello = body.initHello();
    hello.setWorkerId(options_.worker_id);
    hello.setRole(options_.role);
    hello.setNode(options_.node);
    hello.setPid(static_cast<std::uint32_t>(getpid()));
    auto slots = hello.initGpuSlots(static_cast<unsigned>(options_.gpu_slots.size()));
    for (unsigned i = 0; i < options_.gpu_slots.size(); ++i) slots.set(i, options_.gpu_slots[i]);
    hello.setCapacity(options_.capacity);
    hello.setMetricsEndpoint(options_.metrics_endpoint);
  });
  queue_credit(free_slots);
  ++counters_.hellos_sent;
}

void WorkerConnection::queue_credit(std::uint32_t credits) {
  queue_control([&](Body::Builder body) {
    auto credit = body.initCredit();
    credit.setWorkerId(options_.worker_id);
    credit.setCredits(credits);
  });
}

void WorkerConnection::queue_ack(std::uint64_t work_id) {
  queue_control([&](Body::Builder body) {
    auto ack = body.initAck();
    ack.setWorkId(work_id);
    ack.setCredits(1);
  });
}

void WorkerConnection::queue_refusal(std::uint64_t work_id, const std::string& message) {
  // The refused item never took a slot: the ack the Error carries gives the learner the credit
  // back.
  queue_control(
      [&](Body::Builder body) {
        auto error = body.initError();
        error.setWorkId(work_id);
        error.setMessage(message);
      },
      work_id);
}

Result<wire::Decoded<schema::Envelope>> WorkerConnection::receive(
    std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  std::unique_lock<std::mutex> lock(mutex_);
  bool socket_had_more = false;  // the last round took a message off the socket
  std::size_t rounds_past_deadline = 0;
  for (bool first = true;; first = false) {
    if (!inbox_.empty()) {
      auto envelope = std::move(inbox_.front());
      inbox_.pop_front();
      // Another receiver takes the next one (or the role, if it waits for the socket).
      if (role_.consumers_waiting() > 0) inbox_ready_.notify_one();
      return envelope;
    }
    if (closing_) return Status::aborted("transport: worker connection closed");
    // A zero timeout still reads what waits on the socket (a message a round, up to a round's
    // worth of the background thread).
    if (!first && SteadyClock::now() >= deadline &&
        (!socket_had_more || ++rounds_past_deadline > kMaxReceivesPerRound)) {
      break;
    }
    if (role_.take_for_consumer()) {
      lock.unlock();
      socket_had_more = poll_once(deadline, kConsumerRoundMessages).messages > 0;
      lock.lock();
      const bool wake_background = role_.release_by_consumer(SteadyClock::now());
      if (wake_background || closing_) background_wake_.notify_one();
      if (role_.consumers_waiting() > 0) inbox_ready_.notify_one();
      continue;
    }
    socket_had_more = false;
    role_.consumer_waits();
    inbox_ready_.wait_until(lock, deadline);
    role_.consumer_done_waiting();
  }
  return Status::timeout("transport: nothing from the learner within " +
                         std::to_string(timeout.count()) + " ms");
}

Status WorkerConnection::wait_for_outbox_room(std::unique_lock<std::mutex>& lock,
                                              std::chrono::milliseconds timeout) {
  const bool room = outbox_not_full_.wait_for(
      lock, timeout, [&] { return closing_ || outbox_.size() < options_.outbox_capacity; });
  if (closing_) return Status::aborted("transport: worker connection closed");
  if (!room) {
    return Status::unavailable("transport: worker '" + options_.worker_id + "': outbox full (" +
                               std::to_string(options_.outbox_capacity) + " frames) for " +
                               std::to_string(timeout.count()) + " ms");
  }
  return Status::ok_status();
}

Status WorkerConnection::send_result(std::string payload, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  DICE_RETURN_IF_ERROR(wait_for_outbox_room(lock, timeout));
  outbox_.push_back(payload_frame(std::move(payload)));
  lock.unlock();
  flush_and_wake();
  return Status::ok_status();
}

Status WorkerConnection::finish(std::uint64_t work_id, capnp::MessageBuilder& last_result,
                                std::chrono::milliseconds timeout) {
  // Stamped and encoded outside the locks; a retry after an error stamps the same ack again.
  auto ack = last_result.getRoot<schema::Envelope>().initAck();
  ack.setWorkId(work_id);
  ack.setCredits(1);  // the slot this finish frees
  zmq::message_t frame = encode_frame(last_result);
  std::unique_lock<std::mutex> lock(mutex_);
  DICE_RETURN_IF_ERROR(wait_for_outbox_room(lock, timeout));
  if (held_.erase(work_id) == 0) {
    return Status::invalid_argument("transport: worker '" + options_.worker_id +
                                    "' does not hold work id " + std::to_string(work_id));
  }
  ++counters_.finished;
  outbox_.push_back(std::move(frame));
  lock.unlock();
  flush_and_wake();
  return Status::ok_status();
}

Status WorkerConnection::finish(std::uint64_t work_id) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return Status::aborted("transport: worker connection closed");
    if (held_.erase(work_id) == 0) {
      return Status::invalid_argument("transport: worker '" + options_.worker_id +
                                      "' does not hold work id " + std::to_string(work_id));
    }
    ++counters_.finished;
    // The ack may pass outbox_capacity: it is what lets the learner send less.
    queue_ack(work_id);
  }
  flush_and_wake();
  return Status::ok_status();
}

WorkerStats WorkerConnection::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  WorkerStats s = counters_;
  s.inbox = inbox_.size();
  s.outbox = outbox_.size();
  s.held = held_.size();
  return s;
}

void WorkerConnection::handle(wire::Decoded<schema::Envelope> envelope, TimePoint now) {
  auto body = envelope.root().getBody();
  last_from_learner_ = now;
  std::uint64_t work_id = 0;
  switch (body.which()) {
    case Body::HEARTBEAT: {
      // A learner that does not know this worker (restarted, or declared it dead) addresses its
      // heartbeat to nobody. Once per interval is enough: the Hello may already be on its way.
      const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
      if (options_.worker_id != body.getHeartbeat().getWorkerId().cStr() &&
          now - last_hello_ >= interval) {
        DICE_LOG(Info) << "learner does not know this worker; saying hello again"
                       << kv("worker", options_.worker_id);
        queue_hello();
        last_hello_ = now;
      }
      return;
    }
    case Body::ROLLOUT_REQUEST:
      work_id = body.getRolloutRequest().getWorkId();
      break;
    case Body::EVAL_REQUEST:
      work_id = body.getEvalRequest().getWorkId();
      break;
    case Body::WEIGHTS_UPDATE:
    case Body::SHUTDOWN:
      inbox_.push_back(std::move(envelope));  // the poller's caller wakes the receivers
      return;
    case Body::CANCEL: {
      // Only for an item in hand: a late Cancel (the item finished meanwhile) or one for an id
      // this worker never had is dropped here, so the receiver never sees one it cannot act on.
      const std::uint64_t cancelled = body.getCancel().getWorkId();
      if (held_.count(cancelled) == 0) {
        ++counters_.cancels_ignored;
        if (should_log_occurrence(counters_.cancels_ignored)) {
          DICE_LOG(Info) << "cancel for work not held ignored" << kv("worker", options_.worker_id)
                         << kv("work", cancelled) << kv("count", counters_.cancels_ignored);
        }
        return;
      }
      ++counters_.cancels_received;
      inbox_.push_back(std::move(envelope));
      return;
    }
    default:
      ++counters_.unexpected_messages;
      if (should_log_occurrence(counters_.unexpected_messages)) {
        DICE_LOG(Warn) << "unexpected message from the learner dropped"
                       << kv("worker", options_.worker_id)
                       << kv("what", wire::body_name(body.which()))
                       << kv("count", counters_.unexpected_messages);
      }
      return;
  }
  if (held_.count(work_id)) {
    // Re-sent after a re-Hello while this worker still has it. The learner spent a credit on
    // this copy; every work message received gives exactly one credit back.
    ++counters_.duplicate_work;
    queue_credit(1);
    return;
  }
  if (inbox_.size() >= options_.inbox_capacity) {
    ++counters_.refused_work;
    queue_refusal(work_id, "worker '" + options_.worker_id + "' inbox full");
    return;
  }
  held_.insert(work_id);
  ++counters_.received_work;
  inbox_.push_back(std::move(envelope));  // the poller's caller wakes the receivers
}

WorkerConnection::Received WorkerConnection::receive_all(TimePoint now, bool arm,
                                                         std::size_t max_messages) {
  std::vector<std::vector<zmq::message_t>> messages;
  Received received;
  {
    std::lock_guard<std::mutex> socket_lock(socket_mutex_);
    if (socket_closed_) return received;
    messages = receive_round(dealer_, max_messages);
    // An empty round re-armed the descriptor's edge; a sender from here on checks for input on
    // the sleeper's behalf.
    if (messages.empty() && arm) poller_asleep_ = received.armed = true;
  }
  // At the cap, more may wait behind an edge already consumed.
  received.more = messages.size() == max_messages;
  received.messages = messages.size();
  if (messages.empty()) return received;
  // Decoding (the expensive part) happens outside the lock, then the lot is handled at once.
  std::vector<Result<wire::Decoded<schema::Envelope>>> decoded;
  decoded.reserve(messages.size());
  for (auto& frames : messages) {
    if (frames.size() != 1) {
      decoded.push_back(
          Status::corruption("expected 1 frame, got " + std::to_string(frames.size())));
      continue;
    }
    decoded.push_back(decode_frame(std::move(frames[0])));
  }
  std::size_t added = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::size_t before = inbox_.size();
    for (auto& envelope : decoded) {
      if (envelope.ok()) {
        handle(std::move(envelope).value(), now);
        continue;
      }
      ++counters_.malformed_frames;
      if (should_log_occurrence(counters_.malformed_frames)) {
        DICE_LOG(Warn) << "malformed frame from the learner dropped"
                       << kv("worker", options_.worker_id)
                       << kv("error", envelope.status().to_string())
                       << kv("count", counters_.malformed_frames);
      }
    }
    added = inbox_.size() - before;
  }
  received.work = added;
  return received;
}

void WorkerConnection::send_heartbeat() {
  zmq::message_t frame = encode_control([&](Body::Builder body) {
    auto heartbeat = body.initHeartbeat();
    heartbeat.setWorkerId(options_.worker_id);
    heartbeat.setState(held_.empty() ? schema::WorkerState::IDLE : schema::WorkerState::BUSY);
    heartbeat.setInFlight(static_cast<std::uint32_t>(held_.size()));
    heartbeat.setCompleted(counters_.finished);
    heartbeat.setUnixMillis(wire::unix_millis_now());
  });
  // Heartbeats skip the outbox: a stale one is worth nothing, and a full pipe should not grow.
  if (send_frame(dealer_, frame) != SendOutcome::kSent) ++counters_.heartbeats_dropped;
}

bool WorkerConnection::send_outbox() {
  const bool any = !outbox_.empty();
  // Send in order; what would block stays queued for the next round.
  while (!outbox_.empty()) {
    const SendOutcome outcome = send_frame(dealer_, outbox_.front());
    if (outcome == SendOutcome::kWouldBlock) break;
    outbox_.pop_front();
  }
  if (outbox_.size() < options_.outbox_capacity) outbox_not_full_.notify_all();
  return any;
}

void WorkerConnection::wake_sleeper_if_input() {
  // Only a thread asleep on the descriptor can miss the edge; a poller not yet asleep drains the
  // socket (re-arming the edge) before it sleeps.
  if (poller_asleep_ && has_input(dealer_)) wakeup_.notify();
}

void WorkerConnection::flush_and_wake() {
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  if (socket_closed_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // No socket operation, no edge consumed: nothing to re-check (each check is a system call).
    if (!send_outbox()) return;
  }
  wake_sleeper_if_input();
}

WorkerConnection::Received WorkerConnection::poll_once(TimePoint until, std::size_t max_messages) {
  const auto now = SteadyClock::now();
  const Received received = receive_all(now, /*arm=*/true, max_messages);
  // What handling queued (credits, refusals, a Hello) goes out now.
  if (received.messages > 0) flush_and_wake();
  if (!received.armed) return received;
  const auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - now);
  wakeup_.wait(socket_fd_, static_cast<int>(std::max<std::int64_t>(0, wait.count())));
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  poller_asleep_ = false;
  return received;
}

bool WorkerConnection::run_timers(TimePoint now) {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  const auto silent_after = interval * options_.misses_before_dead;
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return false;
    // An unsent outbox means the last Hello has not left yet (learner down): no pile of Hellos.
    if (now - last_from_learner_ > silent_after && now - last_hello_ > silent_after &&
        outbox_.empty()) {
      DICE_LOG(Warn) << "learner silent; saying hello again" << kv("worker", options_.worker_id);
      queue_hello();
      last_hello_ = now;
    }
    bool sent = false;
    if (now - last_heartbeat_ >= interval) {
      send_heartbeat();
      last_heartbeat_ = now;
      sent = true;
    }
    // Also retries what would have blocked before (learner away, pipe full).
    sent = send_outbox() || sent;
    if (!sent) return true;
  }
  wake_sleeper_if_input();
  return true;
}

void WorkerConnection::run() {
  set_current_thread_name("dice/worker");
  const auto tick =
      std::chrono::milliseconds(std::clamp(options_.heartbeat_interval_ms / 4, 1, 250));
  run_background_loop(
      role_, mutex_, closing_, background_wake_, inbox_ready_, tick,
      [this](SteadyClock::time_point now) { return run_timers(now); },
      [this](SteadyClock::time_point until) {
        return poll_once(until, kMaxReceivesPerRound).work > 0;
      });
  std::lock_guard<std::mutex> socket_lock(socket_mutex_);
  dealer_.close();
  socket_closed_ = true;
}

}  // namespace dice::transport
