// Options of dice-cluster: where the services run (local processes, ssh, or a Slurm allocation),
// where workers find the learner, how liveness is judged, and which node runs which roles on which
// GPUs. Each field is documented once, in visit_fields.
#pragma once

#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "common/config/config_errors.h"
#include "common/config/field_checks.h"

namespace dice {

enum class ClusterBackend { kLocal, kSsh, kSlurm };
inline constexpr config::EnumName<ClusterBackend> kClusterBackendNames[] = {
    {ClusterBackend::kLocal, "local"},
    {ClusterBackend::kSsh, "ssh"},
    {ClusterBackend::kSlurm, "slurm"}};
constexpr const auto& enum_names(ClusterBackend) {
  return kClusterBackendNames;
}

enum class NodeRole { kLearner, kRollout, kReward };
inline constexpr config::EnumName<NodeRole> kNodeRoleNames[] = {{NodeRole::kLearner, "learner"},
                                                                {NodeRole::kRollout, "rollout"},
                                                                {NodeRole::kReward, "reward"}};
constexpr const auto& enum_names(NodeRole) {
  return kNodeRoleNames;
}

// The learner's sockets, which every worker connects to.
struct LearnerEndpointOptions {
  std::string host = "127.0.0.1";
  int port = 5555;
  int metrics_port = 9100;

  template <class V>
  void visit_fields(V& v) {
    v.field("host", host, "Address workers use to reach the learner. Default: 127.0.0.1",
            config::non_empty());
    v.field("port", port,
            "Work socket (tasks, rollouts, verdicts, heartbeats); 0 = any free port, local backend "
            "only. Default: 5555",
            config::in_range(0, 65535));
    v.field("metrics_port", metrics_port,
            "HTTP /metrics of the learner; 0 = any free port. Default: 9100",
            config::in_range(0, 65535));
  }

  void validate(config::Checker& c) const {
    if (metrics_port != 0 && metrics_port == port) c.error("metrics_port", "must differ from port");
  }
};

// Prometheus /metrics ports of the workers. Worker i of a role (its --worker-index, counted across
// nodes in config order; see service_plan.h) listens on <role>_base_port + i, so a port names one
// worker for the whole run and adding rollout workers never moves the reward workers' ports. The
// learner's port is cluster.learner.metrics_port. Each service gets its port as --metrics-port N.
// The ranges of both roles and the learner's three ports must not overlap (checked in
// ClusterOptions::validate, where the worker counts are known).
struct WorkerMetricsOptions {
  int rollout_base_port = 9200;
  int reward_base_port = 9300;

  template <class V>
  void visit_fields(V& v) {
    v.field("rollout_base_port", rollout_base_port,
            "Rollout worker i serves /metrics on this + i; 0 = each picks any free port. "
            "Default: 9200",
            config::in_range(0, 65535));
    v.field("reward_base_port", reward_base_port,
            "Reward worker i serves /metrics on this + i; 0 = each picks any free port. "
            "Default: 9300",
            config::in_range(0, 65535));
  }
};

struct HeartbeatOptions {
  int interval_ms = 1000;
  int misses_before_dead = 5;

  template <class V>
  void visit_fields(V& v) {
    v.field("interval_ms", interval_ms, "Heartbeat period, both directions. Default: 1000",
            config::at_least(10));
    v.field("misses_before_dead", misses_before_dead,
            "A peer silent for this many periods is dead: its work is re-queued. Default: 5",
            config::at_least(1));
  }
};

namespace transport {
// poll_spin_us value "auto": spin where the process may run on 8 or more CPUs
// (net/transport/wakeup.h).
inline constexpr int kAutoSpin = -1;
}  // namespace transport

// Whether the services authenticate and encrypt their traffic with ZeroMQ CURVE
// (docs/SECURITY.md, "A malicious or buggy peer on the network").
enum class CurveMode { kAuto, kOn, kOff };
inline constexpr config::EnumName<CurveMode> kCurveModeNames[] = {
    {CurveMode::kAuto, "auto"}, {CurveMode::kOn, "on"}, {CurveMode::kOff, "off"}};
constexpr const auto& enum_names(CurveMode) {
  return kCurveModeNames;
}

// Socket tuning and security of every service's transport (net/transport/transport_options.h).
struct ClusterTransportOptions {
  int poll_spin_us = transport::kAutoSpin;  // -1
  std::string bind_address;
  CurveMode curve = CurveMode::kAuto;
  int max_attempts = 3;

  template <class V>
  void visit_fields(V& v) {
    v.field("poll_spin_us", poll_spin_us,
            "Microseconds a service thread waiting for a message checks its socket without "
            "sleeping first (saves a wake-up per message at the cost of a busy core); -1 = auto: "
            "50 where the service may run on 8 or more CPUs, 0 below. Default: -1",
            config::in_range(transport::kAutoSpin, 100000));
    v.field("bind_address", bind_address,
            "Address every listening socket binds to: the learner's work socket and every "
            "/metrics (an IP address, a host name resolved at start, or 0.0.0.0 for every "
            "interface). Empty = the learner's at the address cluster.learner.host resolves to "
            "(the one its workers use); workers' /metrics at 127.0.0.1 with the local backend, "
            "else at the address their node's host name resolves to. Default: empty");
    v.field("curve", curve,
            "ZeroMQ CURVE between the services: every connection authenticated by a key pair "
            "dice-cluster makes for each service of the run (in <cluster.local.state_dir>/keys, "
            "0600) and encrypted; a worker's identity is bound to its key. auto = on with the ssh "
            "and slurm backends, off with local (one machine, the learner on loopback). "
            "Default: auto");
    v.field("max_attempts", max_attempts,
            "Dispatches of one work item that may end with its worker lost (declared dead, or "
            "reconnected as a new process) while it was that worker's only item, before the "
            "learner stops sending it (an item lost beside others is sent again alone, "
            "uncounted): an evaluation is "
            "then judged a failure (workerLost, reward 0, in the reward log), a rollout request "
            "fails its group, so a candidate that kills its worker does not go round them all. "
            "0 = no cap. Default: 3",
            config::in_range(0, 1000));
  }

  // Whether CURVE is on for a run with `backend`.
  bool curve_on(ClusterBackend backend) const {
    return curve == CurveMode::kOn ||
           (curve == CurveMode::kAuto && backend != ClusterBackend::kLocal);
  }
};

struct NodeOptions {
  std::string host;
  std::vector<NodeRole> roles;
  std::map<std::string, std::vector<int>> gpus;

  template <class V>
  void visit_fields(V& v) {
    v.field("host", host, "Host name (ssh target; the Slurm node name under slurm). Required.",
            config::required(), config::non_empty());
    v.field("roles", roles, "Services this node runs. Required.", config::required(),
            config::non_empty());
    v.field("gpus", gpus,
            "Per role, CUDA device ordinals: one rollout/reward worker per entry; the learner "
            "trains on all of its entries. Default: {}",
            config::at_least(0));
  }

  void validate(config::Checker& c) const {
    for (std::size_t i = 0; i < roles.size(); ++i) {
      std::string name = config::enum_to_name(roles[i]);
      for (std::size_t j = 0; j < i; ++j) {
        if (roles[j] == roles[i])
          c.error("roles[" + std::to_string(i) + "]", "role '" + name + "' listed twice");
      }
      auto found = gpus.find(name);
      if (found == gpus.end() || found->second.empty()) {
        c.error("gpus", "no GPUs for role '" + name + "' (add gpus: {" + name + ": [0]})");
      }
    }
    for (const auto& entry : gpus) {
      NodeRole role;
      if (!config::enum_from_name(entry.first, &role)) {
        c.error("gpus." + entry.first, "unknown role; expected learner, rollout or reward");
        continue;
      }
      bool listed = false;
      for (NodeRole r : roles) listed = listed || r == role;
      if (!listed)
        c.error("gpus." + entry.first, "GPUs for a role this node does not run (see roles)");
    }
  }
};

// The ssh backend (cluster/ssh_backend.h): the local supervisor runs one ssh client per service,
// with BatchMode (key authentication, no prompts) and no tty. The nodes share a filesystem with
// this machine: the config, the executables and the working directory have the same paths there.
// The supervisor settings (restarts, drain, logs) are cluster.local's.
struct SshOptions {
  std::string user;
  std::vector<std::string> extra_args;
  std::string remote_dir;

  template <class V>
  void visit_fields(V& v) {
    v.field("user", user, "Remote user; empty = ssh's default. Default: empty");
    v.field("extra_args", extra_args,
            "Extra ssh arguments, placed before dice-cluster's own (so they win), e.g. [-p, 2222, "
            "-i, /home/me/.ssh/dice]. Default: []");
    v.field("remote_dir", remote_dir,
            "Folder each service runs in on its node; empty = dice-cluster's working directory "
            "(the same path on a shared filesystem). Default: empty");
  }
};

struct SlurmOptions {
  std::string partition;
  std::string time_limit = "24:00:00";
  std::string account;
  std::vector<std::string> extra_args;
  int down_timeout_s = 120;

  template <class V>
  void visit_fields(V& v) {
    v.field("partition", partition, "Slurm partition; required with backend slurm. Default: empty");
    v.field("time_limit", time_limit,
            "Job time limit as Slurm takes it ([D-]HH:MM:SS). Default: 24:00:00",
            config::non_empty());
    v.field("account", account, "Account to charge; empty = the user's default. Default: empty");
    v.field("extra_args", extra_args,
            "Extra #SBATCH lines for the job, e.g. [--exclusive, --gres=gpu:8]. Default: []");
    v.field("down_timeout_s", down_timeout_s,
            "How long down waits after scancel for Slurm to report the job ended (Slurm's "
            "KillWait, 30 s by default, passes between SIGTERM and SIGKILL). Default: 120",
            config::at_least(1));
  }
};

// The local backend: a supervisor process on this machine runs every service as a child,
// restarting crashed ones with exponential backoff.
struct LocalOptions {
  std::string bin_dir;
  std::map<std::string, std::string> executables;
  std::string state_dir;
  int drain_timeout_ms = 10000;
  int start_timeout_ms = 10000;
  int restart_backoff_ms = 500;
  int restart_backoff_max_ms = 30000;
  int max_restarts = 5;
  int restart_window_s = 300;
  int max_restarts_per_run = 20;

  template <class V>
  void visit_fields(V& v) {
    v.field("bin_dir", bin_dir,
            "Folder searched first for service executables; empty = look next to dice-cluster, "
            "then in the build tree's <role>/ folder, then PATH. Default: empty",
            config::is_path());
    v.field("executables", executables,
            "Per role (learner, rollout, reward), the executable to run instead of dice-<role>: a "
            "bare name is searched like the default, a name with '/' is used as is. Default: {}");
    v.field("state_dir", state_dir,
            "Where the run's state file and one log per service are kept (slurm backend too: "
            "there it must be on a filesystem the nodes share); empty = "
            "<folder of run.reward_log_path>/cluster. Default: empty",
            config::is_path());
    v.field("drain_timeout_ms", drain_timeout_ms,
            "On down, how long services get to exit after SIGTERM before SIGKILL. Default: 10000",
            config::at_least(0));
    v.field("start_timeout_ms", start_timeout_ms,
            "How long up waits for every service to be launched (slurm: for the job to run and "
            "start each step; a job still pending then is left queued). Default: 10000",
            config::at_least(100));
    v.field("restart_backoff_ms", restart_backoff_ms,
            "Delay before the first restart of a crashed service (the restart settings apply to "
            "the slurm backend's steps too); doubles with each further restart in the window. "
            "Default: 500",
            config::at_least(0));
    v.field("restart_backoff_max_ms", restart_backoff_max_ms,
            "Cap of the restart delay. Default: 30000", config::at_least(0));
    v.field("max_restarts", max_restarts,
            "A service that needs more restarts than this within restart_window_s is given up "
            "(state failed); once every service of a role is, the run is stopped (the local "
            "supervisor, or a Slurm job's script) and `status` says why. Default: 5",
            config::at_least(0));
    v.field("restart_window_s", restart_window_s,
            "Window over which restarts are counted. Default: 300", config::at_least(1));
    v.field("max_restarts_per_run", max_restarts_per_run,
            "A service restarted this many times in the run is given up like one past "
            "max_restarts, however far apart the restarts came: a failure that recurs every few "
            "minutes stays under the rate limit forever. Local and ssh backends (the supervisor); "
            "a service that exits 2 (bad input) is never restarted. 0 = no cap. Default: 20",
            config::at_least(0));
  }

  void validate(config::Checker& c) const {
    for (const auto& entry : executables) {
      NodeRole role;
      if (!config::enum_from_name(entry.first, &role)) {
        c.error("executables." + entry.first, "unknown role; expected learner, rollout or reward");
      } else if (entry.second.empty()) {
        c.error("executables." + entry.first, "must not be empty");
      }
    }
    if (restart_backoff_max_ms < restart_backoff_ms) {
      c.error("restart_backoff_max_ms", "must be at least restart_backoff_ms");
    }
  }
};

// dice-dash beside the run (tools/dice-dash, docs/DASHBOARD.md): a read-only web dashboard over
// the run's reward log, started by `dice-cluster up` on the learner's node; up prints its address.
struct DashOptions {
  bool enabled = false;
  std::string bind_address = "127.0.0.1";
  int port = 8470;
  std::string token_file;

  template <class V>
  void visit_fields(V& v) {
    v.field("enabled", enabled,
            "Start dice-dash with the run, on the learner's node (every backend), and stop it "
            "with the run. It opens run.reward_log_path as a RocksDB secondary: read-only, never "
            "slowing the learner. Default: false");
    v.field("bind_address", bind_address,
            "IP address dice-dash listens on; 0.0.0.0 = every interface (then set token_file). "
            "Default: 127.0.0.1",
            config::non_empty());
    v.field("port", port, "TCP port of the dashboard. Default: 8470", config::in_range(1, 65535));
    v.field("token_file", token_file,
            "File whose first line is the access token every request must carry; empty = no "
            "token. Default: empty",
            config::is_path());
  }
};

struct ClusterOptions {
  ClusterBackend backend = ClusterBackend::kLocal;
  LearnerEndpointOptions learner;
  WorkerMetricsOptions worker_metrics;
  HeartbeatOptions heartbeat;
  ClusterTransportOptions transport;
  std::vector<NodeOptions> nodes = {
      NodeOptions{"localhost",
                  {NodeRole::kLearner, NodeRole::kRollout, NodeRole::kReward},
                  {{"learner", {0}}, {"rollout", {0}}, {"reward", {0}}}}};
  SshOptions ssh;
  SlurmOptions slurm;
  LocalOptions local;
  DashOptions dash;

  template <class V>
  void visit_fields(V& v) {
    v.field("backend", backend,
            "How services are started: local processes, ssh, or Slurm. Default: local");
    v.field("learner", learner, "Where workers reach the learner.");
    v.field("worker_metrics", worker_metrics, "Workers' /metrics ports.");
    v.field("heartbeat", heartbeat, "Liveness.");
    v.field("transport", transport, "Socket tuning of every service.");
    v.field("nodes", nodes,
            "Machines and the roles and GPUs of each. Default: one localhost node running every "
            "role on GPU 0",
            config::non_empty());
    v.field("ssh", ssh, "ssh backend settings.");
    v.field("slurm", slurm, "slurm backend settings.");
    v.field("local", local, "local backend settings (supervisor, restarts, logs).");
    v.field("dash", dash, "dice-dash, the run's web dashboard.");
  }

  void validate(config::Checker& c) const {
    int learners = 0, rollouts = 0, rewards = 0;
    for (const auto& node : nodes) {
      for (NodeRole role : node.roles) {
        learners += role == NodeRole::kLearner;
        rollouts += role == NodeRole::kRollout;
        rewards += role == NodeRole::kReward;
      }
    }
    if (learners != 1)
      c.error("nodes",
              "exactly one node must have role learner, found " + std::to_string(learners));
    if (rollouts == 0) c.error("nodes", "no node has role rollout");
    validate_metrics_ports(c);
    if (rewards == 0) c.error("nodes", "no node has role reward");
    if (backend == ClusterBackend::kLocal && nodes.size() > 1) {
      c.error("nodes", "the local backend runs one machine; use ssh or slurm for " +
                           std::to_string(nodes.size()) + " nodes");
    }
    if (backend != ClusterBackend::kLocal && learner.port == 0) {
      c.error("learner.port",
              "fixed ports are needed when workers run on other machines (0 = any free port)");
    }
    const std::string& bind = transport.bind_address;
    if (backend != ClusterBackend::kLocal &&
        (bind == "localhost" || bind == "::1" || bind.rfind("127.", 0) == 0)) {
      c.error("transport.bind_address",
              "'" + bind + "' is a loopback address: workers on other machines cannot reach it");
    }
    if (dash.enabled && (dash.port == learner.port || dash.port == learner.metrics_port)) {
      c.error("dash.port", "must differ from the learner's ports");
    }
    if (backend == ClusterBackend::kSlurm && slurm.partition.empty()) {
      c.error("slurm.partition", "required with backend slurm");
    }
  }

  // How many workers of `role` the nodes run: one per entry of gpus.<role> (service_plan.h).
  int worker_count(NodeRole role) const {
    int count = 0;
    std::string name = config::enum_to_name(role);
    for (const auto& node : nodes) {
      auto found = node.gpus.find(name);
      if (found != node.gpus.end()) count += static_cast<int>(found->second.size());
    }
    return count;
  }

 private:
  // Each role's port range [base, base + workers) stays below 65536 and clear of the other
  // role's range and of the learner's ports (0 = any free port takes part in no collision).
  void validate_metrics_ports(config::Checker& c) const {
    struct Range {
      const char* key;
      int first;
      int count;
    };
    const Range ranges[] = {{"worker_metrics.rollout_base_port", worker_metrics.rollout_base_port,
                             worker_count(NodeRole::kRollout)},
                            {"worker_metrics.reward_base_port", worker_metrics.reward_base_port,
                             worker_count(NodeRole::kReward)},
                            {"learner.port", learner.port, 1},
                            {"learner.metrics_port", learner.metrics_port, 1}};
    for (std::size_t i = 0; i < 2; ++i) {  // the two worker ranges, each against what follows
      const Range& r = ranges[i];
      if (r.first == 0 || r.count == 0) continue;
      int last = r.first + r.count - 1;
      if (last > 65535) {
        c.error(r.key, std::to_string(r.count) + " workers need ports " + std::to_string(r.first) +
                           ".." + std::to_string(last) + ", past 65535");
      }
      for (std::size_t j = i + 1; j < std::size(ranges); ++j) {
        const Range& o = ranges[j];
        if (o.first == 0 || o.count == 0) continue;
        if (r.first <= o.first + o.count - 1 && o.first <= last) {
          c.error(r.key, "ports " + std::to_string(r.first) + ".." + std::to_string(last) +
                             " overlap " + o.key + " (" + std::to_string(o.first) +
                             (o.count > 1 ? ".." + std::to_string(o.first + o.count - 1) : "") +
                             ")");
        }
      }
    }
  }
};

}  // namespace dice
