// Options of dice-cluster: where the services run (local processes, ssh, or a Slurm allocation),
// where workers find the learner, how liveness is judged, and which node runs which roles on which
// GPUs. Each field is documented once, in visit_fields.
#pragma once

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
  int publish_port = 5556;
  int metrics_port = 9100;

  template <class V>
  void visit_fields(V& v) {
    v.field("host", host, "Address workers use to reach the learner. Default: 127.0.0.1",
            config::non_empty());
    v.field("port", port,
            "Work socket (tasks, rollouts, verdicts, heartbeats); 0 = any free port, local backend "
            "only. Default: 5555",
            config::in_range(0, 65535));
    v.field("publish_port", publish_port,
            "Broadcast socket (weight updates, shutdown); 0 = any free port. Default: 5556",
            config::in_range(0, 65535));
    v.field("metrics_port", metrics_port,
            "HTTP /metrics of the learner; 0 = any free port. Default: 9100",
            config::in_range(0, 65535));
  }

  void validate(config::Checker& c) const {
    if (port != 0 && port == publish_port) c.error("publish_port", "must differ from port");
    if (metrics_port != 0 && (metrics_port == port || metrics_port == publish_port)) {
      c.error("metrics_port", "must differ from port and publish_port");
    }
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

struct SshOptions {
  std::string user;
  std::vector<std::string> extra_args;
  std::string remote_dir;

  template <class V>
  void visit_fields(V& v) {
    v.field("user", user, "Remote user; empty = ssh's default. Default: empty");
    v.field("extra_args", extra_args, "Extra ssh arguments, e.g. [-p, 2222]. Default: []");
    v.field("remote_dir", remote_dir,
            "Folder each host cds into before starting its services; empty = dice-cluster's "
            "working directory (the same path on a shared filesystem). Default: empty");
  }
};

struct SlurmOptions {
  std::string partition;
  std::string time_limit = "24:00:00";
  std::string account;
  std::vector<std::string> extra_args;

  template <class V>
  void visit_fields(V& v) {
    v.field("partition", partition, "Slurm partition; required with backend slurm. Default: empty");
    v.field("time_limit", time_limit,
            "Job time limit as Slurm takes it ([D-]HH:MM:SS). Default: 24:00:00",
            config::non_empty());
    v.field("account", account, "Account to charge; empty = the user's default. Default: empty");
    v.field("extra_args", extra_args, "Extra sbatch/srun arguments. Default: []");
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
            "Where the supervisor keeps its state file and one log per service; empty = "
            "<folder of run.reward_log_path>/cluster. Default: empty",
            config::is_path());
    v.field("drain_timeout_ms", drain_timeout_ms,
            "On down, how long services get to exit after SIGTERM before SIGKILL. Default: 10000",
            config::at_least(0));
    v.field("start_timeout_ms", start_timeout_ms,
            "How long up waits for the supervisor to start every service. Default: 10000",
            config::at_least(100));
    v.field("restart_backoff_ms", restart_backoff_ms,
            "Delay before the first restart of a crashed service; doubles with each further "
            "restart in the window. Default: 500",
            config::at_least(0));
    v.field("restart_backoff_max_ms", restart_backoff_max_ms,
            "Cap of the restart delay. Default: 30000", config::at_least(0));
    v.field("max_restarts", max_restarts,
            "A service that needs more restarts than this within restart_window_s is given up "
            "(state failed). Default: 5",
            config::at_least(0));
    v.field("restart_window_s", restart_window_s,
            "Window over which restarts are counted. Default: 300", config::at_least(1));
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

struct ClusterOptions {
  ClusterBackend backend = ClusterBackend::kLocal;
  LearnerEndpointOptions learner;
  HeartbeatOptions heartbeat;
  std::vector<NodeOptions> nodes = {
      NodeOptions{"localhost",
                  {NodeRole::kLearner, NodeRole::kRollout, NodeRole::kReward},
                  {{"learner", {0}}, {"rollout", {0}}, {"reward", {0}}}}};
  SshOptions ssh;
  SlurmOptions slurm;
  LocalOptions local;

  template <class V>
  void visit_fields(V& v) {
    v.field("backend", backend,
            "How services are started: local processes, ssh, or Slurm. Default: local");
    v.field("learner", learner, "Where workers reach the learner.");
    v.field("heartbeat", heartbeat, "Liveness.");
    v.field("nodes", nodes,
            "Machines and the roles and GPUs of each. Default: one localhost node running every "
            "role on GPU 0",
            config::non_empty());
    v.field("ssh", ssh, "ssh backend settings.");
    v.field("slurm", slurm, "slurm backend settings.");
    v.field("local", local, "local backend settings (supervisor, restarts, logs).");
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
    if (rewards == 0) c.error("nodes", "no node has role reward");
    if (backend == ClusterBackend::kLocal && nodes.size() > 1) {
      c.error("nodes", "the local backend runs one machine; use ssh or slurm for " +
                           std::to_string(nodes.size()) + " nodes");
    }
    if (backend != ClusterBackend::kLocal && (learner.port == 0 || learner.publish_port == 0)) {
      c.error("learner.port",
              "fixed ports are needed when workers run on other machines (0 = any free port)");
    }
    if (backend == ClusterBackend::kSlurm && slurm.partition.empty()) {
      c.error("slurm.partition", "required with backend slurm");
    }
  }
};

}  // namespace dice
