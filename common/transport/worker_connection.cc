#include "common/transport/worker_connection.h"

#include <unistd.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/log.h"
#include "common/transport/dispatcher_state.h"
#include "common/transport/zmq_frames.h"

namespace dice::transport {
namespace {

using Body = schema::Envelope::Body;
using SteadyClock = std::chrono::steady_clock;

constexpr int kMaxReceivesPerRound = 256;

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

}  // namespace

WorkerConnection::WorkerConnection(WorkerOptions options)
    : options_(std::move(options)), context_(1), dealer_(context_, zmq::socket_type::dealer) {}

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
    connection->dealer_.connect(o.learner_endpoint);
  } catch (const zmq::error_t& e) {
    return Status::invalid_argument("transport: worker '" + o.worker_id + "' cannot connect to '" +
                                    o.learner_endpoint + "': " + e.what());
  }
  const auto now = SteadyClock::now();
  connection->last_from_learner_ = now;
  connection->last_heartbeat_ = now;
  {
    std::lock_guard<std::mutex> lock(connection->mutex_);
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
  wakeup_.notify();
  inbox_ready_.notify_all();
  outbox_not_full_.notify_all();
  if (thread_.joinable()) thread_.join();
}

schema::Envelope::Builder WorkerConnection::init_envelope(capnp::MessageBuilder& message) const {
  return wire::init_envelope(message, options_.worker_id, options_.run_id);
}

std::string WorkerConnection::encode_control(
    const std::function<void(schema::Envelope::Body::Builder)>& fill) const {
  capnp::MallocMessageBuilder message;
  fill(init_envelope(message).getBody());
  return wire::encode(message);
}

void WorkerConnection::queue_hello() {
  const auto free_slots = static_cast<std::uint32_t>(
      options_.capacity - std::min<std::size_t>(options_.capacity, held_.size()));
  outbox_.push_back(encode_control([&](Body::Builder body) {
    auto hello = body.initHello();
    hello.setWorkerId(options_.worker_id);
    hello.setRole(options_.role);
    hello.setNode(options_.node);
    hello.setPid(static_cast<std::uint32_t>(getpid()));
    auto slots = hello.initGpuSlots(static_cast<unsigned>(options_.gpu_slots.size()));
    for (unsigned i = 0; i < options_.gpu_slots.size(); ++i) slots.set(i, options_.gpu_slots[i]);
    hello.setCapacity(options_.capacity);
    hello.setMetricsEndpoint(options_.metrics_endpoint);
  }));
  queue_credit(free_slots);
  ++counters_.hellos_sent;
}

void WorkerConnection::queue_credit(std::uint32_t credits) {
  outbox_.push_back(encode_control([&](Body::Builder body) {
    auto credit = body.initCredit();
    credit.setWorkerId(options_.worker_id);
    credit.setCredits(credits);
  }));
}

void WorkerConnection::queue_refusal(std::uint64_t work_id, const std::string& message) {
  outbox_.push_back(encode_control([&](Body::Builder body) {
    auto error = body.initError();
    error.setWorkId(work_id);
    error.setMessage(message);
  }));
  outbox_.push_back(encode_control([&](Body::Builder body) { body.initAck().setWorkId(work_id); }));
  // The refused item never took a slot: give the learner its credit back.
  queue_credit(1);
}

Result<wire::Decoded<schema::Envelope>> WorkerConnection::receive(
    std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  inbox_ready_.wait_for(lock, timeout, [&] { return closing_ || !inbox_.empty(); });
  if (!inbox_.empty()) {
    auto envelope = std::move(inbox_.front());
    inbox_.pop_front();
    return envelope;
  }
  if (closing_) return Status::aborted("transport: worker connection closed");
  return Status::timeout("transport: nothing from the learner within " +
                         std::to_string(timeout.count()) + " ms");
}

Status WorkerConnection::send_result(std::string payload, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  const bool room = outbox_not_full_.wait_for(
      lock, timeout, [&] { return closing_ || outbox_.size() < options_.outbox_capacity; });
  if (closing_) return Status::aborted("transport: worker connection closed");
  if (!room) {
    return Status::unavailable("transport: worker '" + options_.worker_id + "': outbox full (" +
                               std::to_string(options_.outbox_capacity) + " frames) for " +
                               std::to_string(timeout.count()) + " ms");
  }
  outbox_.push_back(std::move(payload));
  lock.unlock();
  wakeup_.notify();
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
    // Ack and credit may pass outbox_capacity: they are what lets the learner send less.
    outbox_.push_back(
        encode_control([&](Body::Builder body) { body.initAck().setWorkId(work_id); }));
    queue_credit(1);
  }
  wakeup_.notify();
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

void WorkerConnection::handle(wire::Decoded<schema::Envelope> envelope,
                              SteadyClock::time_point now) {
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
      inbox_.push_back(std::move(envelope));
      inbox_ready_.notify_one();
      return;
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
  inbox_.push_back(std::move(envelope));
  inbox_ready_.notify_one();
}

void WorkerConnection::receive_all(SteadyClock::time_point now) {
  std::vector<zmq::message_t> frames;
  for (int i = 0; i < kMaxReceivesPerRound && receive_frames(dealer_, &frames); ++i) {
    if (frames.size() != 1) {
      std::lock_guard<std::mutex> lock(mutex_);
      ++counters_.malformed_frames;
      continue;
    }
    auto decoded = wire::decode_envelope(frames[0].to_string_view());
    std::lock_guard<std::mutex> lock(mutex_);
    if (!decoded.ok()) {
      ++counters_.malformed_frames;
      if (should_log_occurrence(counters_.malformed_frames)) {
        DICE_LOG(Warn) << "malformed frame from the learner dropped"
                       << kv("worker", options_.worker_id)
                       << kv("error", decoded.status().to_string())
                       << kv("count", counters_.malformed_frames);
      }
      continue;
    }
    handle(std::move(decoded).value(), now);
  }
}

void WorkerConnection::send_heartbeat() {
  std::string payload = encode_control([&](Body::Builder body) {
    auto heartbeat = body.initHeartbeat();
    heartbeat.setWorkerId(options_.worker_id);
    heartbeat.setState(held_.empty() ? schema::WorkerState::IDLE : schema::WorkerState::BUSY);
    heartbeat.setInFlight(static_cast<std::uint32_t>(held_.size()));
    heartbeat.setCompleted(counters_.finished);
    heartbeat.setUnixMillis(wire::unix_millis_now());
  });
  // Heartbeats skip the outbox: a stale one is worth nothing, and a full pipe should not grow.
  if (send_frames(dealer_, "", payload) != SendOutcome::kSent) ++counters_.heartbeats_dropped;
}

void WorkerConnection::run() {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  const auto silent_after = interval * options_.misses_before_dead;
  const long poll_ms = std::clamp(options_.heartbeat_interval_ms / 4, 1, 250);
  zmq::pollitem_t items[] = {{dealer_.handle(), 0, ZMQ_POLLIN, 0},
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
    const auto now = SteadyClock::now();
    receive_all(now);

    std::unique_lock<std::mutex> lock(mutex_);
    if (closing_) break;
    // An unsent outbox means the last Hello has not left yet (learner down): no pile of Hellos.
    if (now - last_from_learner_ > silent_after && now - last_hello_ > silent_after &&
        outbox_.empty()) {
      DICE_LOG(Warn) << "learner silent; saying hello again" << kv("worker", options_.worker_id);
      queue_hello();
      last_hello_ = now;
    }
    if (now - last_heartbeat_ >= interval) {
      send_heartbeat();
      last_heartbeat_ = now;
    }
    // Send in order; what would block stays queued for the next round.
    while (!outbox_.empty()) {
      const SendOutcome outcome = send_frames(dealer_, "", outbox_.front());
      if (outcome == SendOutcome::kWouldBlock) break;
      outbox_.pop_front();
    }
    if (outbox_.size() < options_.outbox_capacity) outbox_not_full_.notify_all();
  }
  dealer_.close();
}

}  // namespace dice::transport
