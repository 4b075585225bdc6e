// Options of the learner's WorkDispatcher and of a worker's WorkerConnection.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "net/transport/wakeup.h"
#include "options/cluster_options.h"
#include "schemas/control.capnp.h"

namespace dice::transport {

// "rollout" or "reward": a worker's role as worker ids and CURVE key names spell it.
inline const char* role_name(schema::Role role) {
  switch (role) {
    case schema::Role::ROLLOUT:
      return "rollout";
    case schema::Role::REWARD:
      return "reward";
    default:
      return "unknown";
  }
}

// ZeroMQ CURVE keys of one end of the transport (curve_keys.h says where they come from). With
// an empty secret_key the end speaks plain TCP.
struct CurveOptions {
  // This end's key pair, Z85. Default: empty (CURVE off)
  std::string public_key;
  std::string secret_key;
  // A worker's: the learner's public key, Z85. Default: empty
  std::string server_key;
  // The learner's: every public key it admits (Z85) -> the key's name ("rollout-0"); a worker's
  // Hello must name the worker id its key belongs to. Default: empty
  std::map<std::string, std::string> client_keys;

  bool on() const { return !secret_key.empty(); }
};

struct DispatcherOptions {
  // ZeroMQ endpoint the learner's ROUTER socket binds. "tcp://127.0.0.1:*" picks a free port;
  // WorkDispatcher::endpoint() tells which. Default: "tcp://127.0.0.1:*"
  std::string bind_endpoint = "tcp://127.0.0.1:*";
  // CURVE: authenticated, encrypted connections; a worker id bound to its key. Default: off
  CurveOptions curve;
  // senderId of the learner's envelopes. Default: "learner"
  std::string learner_id = "learner";
  // runId of the learner's envelopes. Default: "-"
  std::string run_id = "-";
  // Heartbeats go to each worker this often. Default: 1000
  int heartbeat_interval_ms = 1000;
  // A worker silent for this many heartbeat intervals is declared dead and its work re-queued.
  // Default: 5
  int misses_before_dead = 5;
  // Work items waiting for a worker; submit() blocks (up to its timeout) when this many wait.
  // Default: 1024
  std::size_t queue_capacity = 1024;
  // Results not yet taken by next_result(); no new work is dispatched while this many wait, so
  // at most capacity + work in flight ever queue. Default: 1024
  std::size_t result_capacity = 1024;
  // Completed work ids remembered to recognise late duplicates (oldest forgotten first).
  // Default: 1048576
  std::size_t remembered_completed = std::size_t{1} << 20;
  // Credits one worker may hold at once; a Credit beyond this is capped (a buggy or hostile
  // worker cannot make the learner send it everything). Default: 4096
  std::uint32_t max_credits_per_worker = 4096;
  // Microseconds a thread waiting for the socket checks it without sleeping first (see wakeup.h);
  // kAutoSpin: 50 where this process may run on 8 or more CPUs, else 0. Default: kAutoSpin
  int poll_spin_us = kAutoSpin;
  // Dispatches of one item that may end with its worker lost (declared dead, or reconnected under
  // the same id) while it was that worker's only item, before the dispatcher answers the item
  // itself: a Verdict of class workerLost for an EvalRequest, an Error for anything else
  // (DispatcherState::give_up). An item lost beside others is sent again alone, uncounted.
  // 0: no cap. Default: 3
  std::uint32_t max_attempts = 3;
};

struct WorkerOptions {
  // The learner's endpoint, e.g. "tcp://learner-host:5555". Required.
  std::string learner_endpoint;
  // Unique and stable across reconnects: "<node>/<role>/<index>". Required.
  std::string worker_id;
  // CURVE: this worker's key pair and the learner's public key. Default: off
  CurveOptions curve;
  // What this worker does. Default: rollout
  schema::Role role = schema::Role::ROLLOUT;
  // Work items this worker holds at once: the credits it grants the learner. Default: 1
  std::uint32_t capacity = 1;
  // runId of this worker's envelopes. Default: "-"
  std::string run_id = "-";
  // Heartbeats go to the learner this often. Default: 1000
  int heartbeat_interval_ms = 1000;
  // After this many intervals without a word from the learner, Hello is sent again (the learner
  // may have restarted or declared this worker dead). Default: 5
  int misses_before_dead = 5;
  // Messages received but not yet taken by receive(); work beyond it is refused with an Error.
  // Default: 64
  std::size_t inbox_capacity = 64;
  // Results and acks waiting to be sent; send_result() blocks (up to its timeout) beyond it.
  // Default: 256
  std::size_t outbox_capacity = 256;
  // Hello fields: host name (empty: this host's name), GPU slots, metrics URL. Default: empty
  std::string node;
  std::vector<std::string> gpu_slots;
  std::string metrics_endpoint;
  // As DispatcherOptions::poll_spin_us. Default: kAutoSpin
  int poll_spin_us = kAutoSpin;
};

// The cluster's heartbeat and socket tuning from the YAML (cluster.heartbeat, cluster.transport)
// into either end's options: one place, so a learner and its workers take them alike.
template <class EndOptions>
void apply_cluster_settings(const ClusterOptions& cluster, EndOptions& out) {
  out.heartbeat_interval_ms = cluster.heartbeat.interval_ms;
  out.misses_before_dead = cluster.heartbeat.misses_before_dead;
  out.poll_spin_us = cluster.transport.poll_spin_us;
  if constexpr (std::is_same_v<EndOptions, DispatcherOptions>) {
    out.max_attempts = static_cast<std::uint32_t>(cluster.transport.max_attempts);
  }
}

}  // namespace dice::transport
