#include "net/transport/dispatcher_state.h"

#include <algorithm>
#include <utility>

#include "common/log.h"
#include "net/transport/curve_keys.h"
#include "net/transport/lost_work_answer.h"

namespace dice::transport {

namespace {

using Body = schema::Envelope::Body;

// Results of one work item are told apart by this key: a rollout sends one Candidate per sample.
constexpr std::uint32_t kVerdictPart = 0;
constexpr std::uint32_t kErrorPart = 0xffffffffu;
// First segment of a heartbeat: a few hundred bytes, where Cap'n Proto's default segment would
// zero 8 KiB per message.
constexpr unsigned kControlMessageWords = 128;

}  // namespace

bool should_log_occurrence(std::uint64_t count) {
  return count > 0 && (count & (count - 1)) == 0;
}

DispatcherState::DispatcherState(DispatcherOptions options) : options_(std::move(options)) {
  // Buckets for every id it will remember, once: growing by rehashing put ~10% of the learner
  // thread's time of a fresh run into moving nodes and faulting in new bucket arrays.
  completed_.reserve(options_.remembered_completed);
}

Status DispatcherState::add_work(WorkItem item) {
  if (item.work_id == 0) return Status::invalid_argument("work id 0 is reserved");
  if (work_.count(item.work_id) || completed_.count(item.work_id)) {
    return Status::invalid_argument("work id " + std::to_string(item.work_id) +
                                    " was already submitted");
  }
  if (queue_full()) {
    return Status::unavailable("work queue full (" + std::to_string(options_.queue_capacity) +
                               " items)");
  }
  Work work;
  work.payload = std::make_shared<const std::string>(std::move(item.payload));
  work.role = item.role;
  pending_[queue_key(item.role)].push_back(item.work_id);
  work_.emplace(item.work_id, std::move(work));
  ++pending_count_;
  ++counters_.submitted;
  return Status::ok_status();
}

bool DispatcherState::cancel(std::uint64_t work_id) {
  auto it = work_.find(work_id);
  if (it == work_.end()) return false;
  if (!it->second.assignee.empty()) {
    if (it->second.cancelled) return false;
    it->second.cancelled = true;
    ++counters_.cancelled_in_flight;
    // Its assignee is registered: a lost worker's items are requeued or dropped at once.
    auto worker = workers_.find(it->second.assignee);
    if (worker != workers_.end()) send_cancel(worker->second, work_id);
    return true;
  }
  // Its id stays in its pending_ queue until dispatch() skips it, as for an item acked while
  // queued; remembered, so a late result of an earlier dispatch counts as a duplicate.
  work_.erase(it);
  --pending_count_;
  remember_completed(work_id);
  ++counters_.cancelled;
  return true;
}

void DispatcherState::handle(const std::string& routing_id,
                             wire::Decoded<schema::Envelope> envelope, TimePoint now,
                             const std::string& key_name) {
  auto root = envelope.root();
  auto body = root.getBody();
  if (body.which() == Body::HELLO) {
    handle_hello(routing_id, body.getHello(), now, key_name);
    return;
  }
  // A last result may carry its item's ack (protocol 3); read it before the body's handling
  // moves the envelope into the result queue.
  const bool fused_ack = root.hasAck();
  const std::uint64_t ack_work = fused_ack ? root.getAck().getWorkId() : 0;
  const std::uint32_t ack_credits = fused_ack ? root.getAck().getCredits() : 0;
  auto id = routing_to_id_.find(routing_id);
  if (id == routing_to_id_.end()) {
    handle_stranger(routing_id, body, fused_ack, ack_work, ack_credits);
    return;
  }
  Worker& worker = workers_.at(id->second);
  worker.last_seen = now;
  handle_worker_message(worker, routing_id, body, envelope);
  // After the result it rides on, as a separate Ack would arrive after it.
  if (fused_ack) {
    handle_ack(worker, ack_work);
    add_credits(worker, ack_credits);
  }
}

void DispatcherState::handle_stranger(const std::string& routing_id, Body::Reader body,
                                      bool fused_ack, std::uint64_t ack_work,
                                      std::uint32_t ack_credits) {
  // A peer that never said Hello to this learner: it outlived a learner restart or was declared
  // dead. Its results belong to work this learner does not track; tell it to introduce itself.
  bool credits_offered = ack_credits > 0;
  switch (body.which()) {
    case Body::HEARTBEAT:
    case Body::CREDIT:
      credits_offered = true;
      break;
    case Body::CANDIDATE:
      count_stray(body.getCandidate().getWorkId(), "");
      break;
    case Body::VERDICT:
      count_stray(body.getVerdict().getWorkId(), "");
      break;
    case Body::ACK:
      count_stray(body.getAck().getWorkId(), "");
      // Its folded-in credit is a Credit from a stranger: answered the same way.
      credits_offered = credits_offered || body.getAck().getCredits() > 0;
      break;
    default:
      if (!fused_ack) count_unexpected(routing_id, "message from a peer that did not say hello");
      break;
  }
  if (fused_ack) count_stray(ack_work, "");
  if (credits_offered) reply_unknown_peer(routing_id);
}

void DispatcherState::handle_worker_message(Worker& worker, const std::string& routing_id,
                                            Body::Reader body,
                                            wire::Decoded<schema::Envelope>& envelope) {
  switch (body.which()) {
    case Body::HEARTBEAT:
      break;
    case Body::CREDIT:
      add_credits(worker, body.getCredit().getCredits());
      break;
    case Body::CANDIDATE: {
      auto candidate = body.getCandidate();
      handle_result(worker, candidate.getWorkId(), candidate.getSampleIndex(),
                    schema::Role::ROLLOUT, std::move(envelope));
      break;
    }
    case Body::VERDICT:
      handle_result(worker, body.getVerdict().getWorkId(), kVerdictPart, schema::Role::REWARD,
                    std::move(envelope));
      break;
    case Body::ERROR: {
      ++counters_.errors_received;
      const std::uint64_t work_id = body.getError().getWorkId();
      if (work_id == 0) {
        // About no work item: the worker's own (a rollout worker that refused a weights push or
        // could not load it). At most one a push and worker, and the learner hears of it nowhere
        // else, so each is logged; an item's Error comes with its item, whose failure is reported.
        DICE_LOG(Error) << "worker reported an error of its own" << kv("worker", worker.worker_id)
                        << kv("error", body.getError().getMessage().cStr())
                        << kv("count", counters_.errors_received);
      } else if (should_log_occurrence(counters_.errors_received)) {
        DICE_LOG(Warn) << "worker reported an error" << kv("worker", worker.worker_id)
                       << kv("work", work_id) << kv("error", body.getError().getMessage().cStr())
                       << kv("count", counters_.errors_received);
      }
      if (work_id != 0)
        handle_result(worker, work_id, kErrorPart, worker.role, std::move(envelope));
      break;
    }
    case Body::ACK:
      // The slot is free whether or not the ack itself was late: the credit counts either way.
      handle_ack(worker, body.getAck().getWorkId());
      add_credits(worker, body.getAck().getCredits());
      break;
    default:
      count_unexpected(routing_id, wire::body_name(body.which()));
      break;
  }
}

void DispatcherState::handle_hello(const std::string& routing_id, schema::Hello::Reader hello,
                                   TimePoint now, const std::string& key_name) {
  const std::string worker_id = hello.getWorkerId().cStr();
  if (worker_id.empty()) {
    count_unexpected(routing_id, "hello without a worker id");
    return;
  }
  // With CURVE a connection speaks only for the worker its key belongs to, in that worker's
  // role: a second connection cannot take over a worker id (and its work) without its secret key.
  if (options_.curve.on() &&
      (!worker_id_matches_key_name(worker_id, key_name) ||
       key_name.rfind(std::string(role_name(hello.getRole())) + "-", 0) != 0)) {
    ++counters_.identity_refusals;
    if (should_log_occurrence(counters_.identity_refusals)) {
      DICE_LOG(Warn) << "hello refused: the worker id or role is not its key's"
                     << kv("worker", worker_id) << kv("role", role_name(hello.getRole()))
                     << kv("key", key_name.empty() ? "(none)" : key_name)
                     << kv("count", counters_.identity_refusals);
    }
    return;
  }
  // The same routing id may have said Hello under another name before.
  auto previous = routing_to_id_.find(routing_id);
  if (previous != routing_to_id_.end() && previous->second != worker_id) {
    declare_dead(previous->second, "its connection now says Hello under another worker id");
  }
  auto it = workers_.find(worker_id);
  if (it != workers_.end() && it->second.routing_id != routing_id) {
    // A new connection under a known id: a restarted process, or a reconnect whose old connection
    // is gone. Whatever it held may never be answered.
    DICE_LOG(Info) << "worker reconnected" << kv("worker", worker_id)
                   << kv("requeued", it->second.in_flight.size());
    requeue_all(it->second);
    routing_to_id_.erase(it->second.routing_id);
  }
  if (it == workers_.end()) {
    it = workers_.emplace(worker_id, Worker()).first;
    DICE_LOG(Info) << "worker joined" << kv("worker", worker_id)
                   << kv("role", static_cast<int>(hello.getRole()))
                   << kv("capacity", hello.getCapacity()) << kv("node", hello.getNode().cStr());
  }
  Worker& worker = it->second;
  worker.worker_id = worker_id;
  worker.routing_id = routing_id;
  worker.role = hello.getRole();
  // The Credit after a Hello grants the worker's free slots afresh; items it still holds from
  // this same connection stay in flight.
  worker.credits = 0;
  worker.last_seen = now;
  routing_to_id_[routing_id] = worker_id;
  send_heartbeat(worker, worker_id, now);  // confirms the registration at once
}

void DispatcherState::handle_result(Worker& worker, std::uint64_t work_id, std::uint32_t part,
                                    schema::Role answered_as,
                                    wire::Decoded<schema::Envelope> envelope) {
  auto it = work_.find(work_id);
  if (it == work_.end() || !it->second.sent_to.count(worker.worker_id)) {
    count_stray(work_id, worker.worker_id);
    return;
  }
  // Its answer is no longer wanted; the worker's ack still completes it.
  if (it->second.cancelled) {
    ++counters_.cancelled_results;
    return;
  }
  // A candidate answers only rollout work and a verdict only evaluation work.
  if (it->second.role && *it->second.role != answered_as) {
    count_unexpected(worker.routing_id, "a result of the wrong kind for its work");
    return;
  }
  // Parts are accepted from any worker that had the item, so a re-dispatched item's results are
  // not lost when the first worker was only slow, and never delivered twice.
  if (!it->second.parts_delivered.insert(part).second) {
    ++counters_.duplicate_results;
    return;
  }
  results_.push_back(WorkResult{work_id, worker.worker_id, std::move(envelope)});
  ++counters_.results_delivered;
}

void DispatcherState::add_credits(Worker& worker, std::uint32_t credits) {
  const std::uint64_t total = std::uint64_t{worker.credits} + credits;
  worker.credits =
      static_cast<std::uint32_t>(std::min<std::uint64_t>(total, options_.max_credits_per_worker));
}

void DispatcherState::handle_ack(Worker& worker, std::uint64_t work_id) {
  auto it = work_.find(work_id);
  if (it == work_.end() || !it->second.sent_to.count(worker.worker_id)) {
    count_stray(work_id, worker.worker_id);
    return;
  }
  // Complete whoever acks first; if the item was re-queued or re-sent meanwhile, the queued copy
  // is skipped and the other worker's later ack counts as a duplicate.
  if (it->second.assignee.empty()) {
    --pending_count_;
  } else {
    auto assignee = workers_.find(it->second.assignee);
    if (assignee != workers_.end()) assignee->second.in_flight.erase(work_id);
  }
  work_.erase(it);
  remember_completed(work_id);
  ++worker.completed;
  ++counters_.completed;
}

// A result or ack that cannot be used: late (its item is complete), or for an item this learner
// never sent to that worker (e.g. work of a learner instance before a restart, whose ids may
// collide with this one's).
void DispatcherState::count_stray(std::uint64_t work_id, const std::string& from) {
  if (completed_.count(work_id)) {
    ++counters_.duplicate_results;
    return;
  }
  ++counters_.unknown_results;
  if (should_log_occurrence(counters_.unknown_results)) {
    DICE_LOG(Warn) << "result for work this learner never sent there dropped"
                   << kv("worker", from.empty() ? "(no hello)" : from) << kv("work", work_id)
                   << kv("count", counters_.unknown_results);
  }
}

void DispatcherState::remember_completed(std::uint64_t work_id) {
  completed_.insert(work_id);
  completed_order_.push_back(work_id);
  while (completed_order_.size() > options_.remembered_completed) {
    completed_.erase(completed_order_.front());
    completed_order_.pop_front();
  }
}

void DispatcherState::requeue(std::uint64_t work_id) {
  auto it = work_.find(work_id);
  if (it == work_.end() || it->second.assignee.empty()) return;
  it->second.assignee.clear();
  // Front of the queue: this work is older than anything waiting. The queue may pass its
  // capacity by the amount that was in flight, which is itself bounded by credits.
  pending_[queue_key(it->second.role)].push_front(work_id);
  ++pending_count_;
  ++counters_.requeued;
}

void DispatcherState::drop_cancelled(std::uint64_t work_id) {
  work_.erase(work_id);
  remember_completed(work_id);  // a late result or ack of it counts as a duplicate
}

void DispatcherState::send_cancel(const Worker& worker, std::uint64_t work_id) {
  capnp::MallocMessageBuilder message(kControlMessageWords);
  auto envelope = wire::init_envelope(message, options_.learner_id, options_.run_id);
  envelope.getBody().initCancel().setWorkId(work_id);
  // After the item's own frame in the outbox, so the worker never sees the Cancel first; not
  // retried if it cannot be sent (the worker then answers the item, and the answer is dropped).
  outbox_.push_back(
      Outbound{worker.routing_id, std::make_shared<const std::string>(wire::encode(message)), 0});
}

void DispatcherState::requeue_all(Worker& worker) {
  const bool alone = worker.in_flight.size() == 1;
  // Highest id first onto the front, so the queue keeps submission order.
  for (auto it = worker.in_flight.rbegin(); it != worker.in_flight.rend(); ++it) {
    auto work = work_.find(*it);
    if (work == work_.end() || work->second.assignee != worker.worker_id) continue;
    if (work->second.cancelled) {  // nobody waits for it: not sent again, not answered
      drop_cancelled(*it);
      continue;
    }
    work->second.lost_on.push_back(worker.worker_id);
    work->second.isolated = true;
    if (alone) ++work->second.lone_losses;
    if (options_.max_attempts > 0 && work->second.lone_losses >= options_.max_attempts) {
      give_up(*it);
    } else {
      requeue(*it);
    }
  }
  worker.in_flight.clear();
  worker.credits = 0;
}

void DispatcherState::give_up(std::uint64_t work_id) {
  auto it = work_.find(work_id);
  if (it == work_.end()) return;
  Work& work = it->second;
  std::string workers;
  for (const std::string& id : work.lost_on) workers += (workers.empty() ? "" : ",") + id;
  const std::string why = "its worker was lost on each of its " +
                          std::to_string(work.lost_on.size()) + " dispatches (workers: " + workers +
                          "): judged a failure unsent again";
  DICE_LOG(Warn) << "work item given up" << kv("work", work_id) << kv("workers", workers);
  auto answer =
      lost_work_answer(*work.payload, work_id, options_.learner_id, options_.run_id, workers, why);
  const std::uint32_t part =
      answer.root().getBody().which() == Body::VERDICT ? kVerdictPart : kErrorPart;
  // A verdict (or error) that came before the worker died already answered the item.
  if (work.parts_delivered.insert(part).second) {
    results_.push_back(WorkResult{work_id, work.lost_on.back(), std::move(answer)});
    ++counters_.results_delivered;
  }
  ++counters_.given_up;
  if (work.assignee.empty()) --pending_count_;
  work_.erase(it);
  remember_completed(work_id);
}

void DispatcherState::declare_dead(const std::string& worker_id, const char* why) {
  auto it = workers_.find(worker_id);
  if (it == workers_.end()) return;
  if (workers_told_to_leave_) {
    DICE_LOG(Info) << "worker left" << kv("worker", worker_id) << kv("why", why);
  } else {
    DICE_LOG(Warn) << "worker declared dead" << kv("worker", worker_id) << kv("why", why)
                   << kv("requeued", it->second.in_flight.size());
    ++counters_.workers_dead;
  }
  requeue_all(it->second);
  routing_to_id_.erase(it->second.routing_id);
  workers_.erase(it);
}

void DispatcherState::tick(TimePoint now) {
  const auto interval = std::chrono::milliseconds(options_.heartbeat_interval_ms);
  const auto dead_after = interval * options_.misses_before_dead;
  std::vector<std::string> dead;
  for (auto& [id, worker] : workers_) {
    if (now - worker.last_seen > dead_after) {
      dead.push_back(id);
    } else if (now - worker.last_heartbeat_sent >= interval) {
      send_heartbeat(worker, id, now);
    }
  }
  for (const std::string& id : dead) declare_dead(id, "silent for too many heartbeat intervals");
  dispatch(now);
}

bool DispatcherState::holds_isolated(const Worker& worker) const {
  for (std::uint64_t id : worker.in_flight) {
    auto work = work_.find(id);
    if (work != work_.end() && work->second.isolated) return true;
  }
  return false;
}

DispatcherState::Worker* DispatcherState::choose_worker(std::optional<schema::Role> role,
                                                        bool isolated) {
  // Readiness-based: only workers that granted credit; the least loaded of them first, ties
  // broken round-robin (starting after the last worker chosen) so idle workers share the work.
  Worker* best = nullptr;
  auto start = workers_.upper_bound(last_chosen_);
  for (std::size_t n = 0; n < workers_.size(); ++n, ++start) {
    if (start == workers_.end()) start = workers_.begin();
    Worker& worker = start->second;
    if (worker.credits == 0 || (role && worker.role != *role)) continue;
    if (isolated ? !worker.in_flight.empty() : holds_isolated(worker)) continue;
    if (best == nullptr || worker.in_flight.size() < best->in_flight.size()) best = &worker;
  }
  return best;
}

void DispatcherState::dispatch(TimePoint now) {
  for (auto& [key, queue] : pending_) {
    while (!queue.empty() && results_.size() < options_.result_capacity) {
      const std::uint64_t work_id = queue.front();
      auto it = work_.find(work_id);
      if (it == work_.end() || !it->second.assignee.empty()) {  // completed while queued
        queue.pop_front();
        continue;
      }
      // Nobody of this role has a credit (or, for an isolated item, nothing else in hand: the
      // queue waits for one to finish what it holds); other roles may.
      Worker* best = choose_worker(it->second.role, it->second.isolated);
      if (best == nullptr) break;
      queue.pop_front();
      last_chosen_ = best->worker_id;
      --pending_count_;
      --best->credits;
      best->in_flight.insert(work_id);
      it->second.assignee = best->worker_id;
      it->second.sent_to.insert(best->worker_id);
      it->second.sent_at = now;
      outbox_.push_back(Outbound{best->routing_id, it->second.payload, work_id});
      ++counters_.dispatched;
    }
  }
}

void DispatcherState::send_failed(const Outbound& out, bool unreachable) {
  ++counters_.send_failures;
  auto id = routing_to_id_.find(out.routing_id);
  if (unreachable && id != routing_to_id_.end()) {
    declare_dead(id->second, "its connection is gone");
    return;
  }
  if (out.work_id == 0) return;  // heartbeats and broadcasts are not retried
  auto it = work_.find(out.work_id);
  if (it == work_.end()) return;
  auto worker = workers_.find(it->second.assignee);
  if (worker != workers_.end()) {
    worker->second.in_flight.erase(out.work_id);
    ++worker->second.credits;  // the credit was not used
  }
  if (it->second.cancelled) {
    drop_cancelled(out.work_id);  // its Cancel, queued behind it, finds nothing there
  } else {
    requeue(out.work_id);
  }
}

void DispatcherState::broadcast(const std::string& payload) {
  auto shared = std::make_shared<const std::string>(payload);
  for (auto& [id, worker] : workers_) outbox_.push_back(Outbound{worker.routing_id, shared, 0});
}

void DispatcherState::broadcast_shutdown(const std::string& payload) {
  workers_told_to_leave_ = true;
  broadcast(payload);
}

void DispatcherState::send_heartbeat(Worker& worker, const std::string& addressed_to,
                                     TimePoint now) {
  capnp::MallocMessageBuilder message(kControlMessageWords);
  auto envelope = wire::init_envelope(message, options_.learner_id, options_.run_id);
  auto heartbeat = envelope.getBody().initHeartbeat();
  heartbeat.setWorkerId(addressed_to);
  heartbeat.setState(worker.in_flight.empty() ? schema::WorkerState::IDLE
                                              : schema::WorkerState::BUSY);
  heartbeat.setInFlight(static_cast<std::uint32_t>(worker.in_flight.size()));
  heartbeat.setCompleted(worker.completed);
  heartbeat.setUnixMillis(wire::unix_millis_now());
  outbox_.push_back(
      Outbound{worker.routing_id, std::make_shared<const std::string>(wire::encode(message)), 0});
  worker.last_heartbeat_sent = now;
}

void DispatcherState::reply_unknown_peer(const std::string& routing_id) {
  capnp::MallocMessageBuilder message(kControlMessageWords);
  auto envelope = wire::init_envelope(message, options_.learner_id, options_.run_id);
  auto heartbeat = envelope.getBody().initHeartbeat();
  heartbeat.setWorkerId("");  // "not registered here: send Hello"
  heartbeat.setUnixMillis(wire::unix_millis_now());
  outbox_.push_back(
      Outbound{routing_id, std::make_shared<const std::string>(wire::encode(message)), 0});
}

void DispatcherState::handle_malformed(const std::string& routing_id, const Status& why) {
  ++counters_.malformed_frames;
  if (should_log_occurrence(counters_.malformed_frames)) {
    DICE_LOG(Warn) << "malformed frame dropped" << kv("worker", worker_for_routing(routing_id))
                   << kv("error", why.to_string()) << kv("count", counters_.malformed_frames);
  }
}

void DispatcherState::count_unexpected(const std::string& routing_id, const char* what) {
  ++counters_.unexpected_messages;
  if (should_log_occurrence(counters_.unexpected_messages)) {
    DICE_LOG(Warn) << "unexpected message dropped" << kv("worker", worker_for_routing(routing_id))
                   << kv("what", what) << kv("count", counters_.unexpected_messages);
  }
}

void DispatcherState::take_outbox(std::vector<Outbound>* into) {
  into->clear();
  into->swap(outbox_);
}

std::vector<Outbound> DispatcherState::take_outbox() {
  std::vector<Outbound> out;
  out.swap(outbox_);
  return out;
}

WorkResult DispatcherState::pop_result() {
  WorkResult result = std::move(results_.front());
  results_.pop_front();
  return result;
}

DispatcherStats DispatcherState::stats(TimePoint now) const {
  DispatcherStats s = counters_;
  s.pending = pending_count_;
  s.in_flight = work_.size() - pending_count_;
  s.results_queued = results_.size();
  s.workers = workers_.size();
  s.credits = 0;
  for (const auto& [id, worker] : workers_) {
    s.credits += worker.credits;
    const auto silent =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - worker.last_seen);
    s.worker_list.push_back(WorkerSnapshot{id, worker.credits, worker.in_flight.size(),
                                           worker.completed, silent.count()});
  }
  for (const auto& [id, work] : work_) {
    if (work.assignee.empty()) continue;
    const auto age = std::chrono::duration_cast<std::chrono::milliseconds>(now - work.sent_at);
    s.oldest_in_flight_ms = std::max<std::int64_t>(s.oldest_in_flight_ms, age.count());
  }
  return s;
}

std::string DispatcherState::worker_for_routing(const std::string& routing_id) const {
  auto it = routing_to_id_.find(routing_id);
  return it == routing_to_id_.end() ? std::string() : it->second;
}

}  // namespace dice::transport
