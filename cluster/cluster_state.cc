#include "cluster/cluster_state.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "common/durable_file.h"

namespace dice::cluster {
namespace {

struct RunStateName {
  ServiceRunState state;
  const char* name;
};
constexpr RunStateName kRunStateNames[] = {
    {ServiceRunState::kStarting, "starting"},     {ServiceRunState::kRunning, "running"},
    {ServiceRunState::kRestarting, "restarting"}, {ServiceRunState::kExited, "exited"},
    {ServiceRunState::kFailed, "failed"},         {ServiceRunState::kStopped, "stopped"}};

YAML::Node encode_service(const ServiceState& s) {
  YAML::Node node;
  node["name"] = s.name;
  node["role"] = s.role;
  node["node"] = s.node;
  node["worker_index"] = s.worker_index;
  node["log"] = s.log_path;
  node["pid"] = static_cast<long>(s.pid);
  node["start_ticks"] = s.start_ticks;
  node["state"] = run_state_name(s.state);
  node["restarts"] = s.restarts;
  node["started_at"] = s.started_at;
  node["last_exit"] = s.last_exit;
  if (!s.step.empty()) node["step"] = s.step;
  if (!s.ssh.empty()) {
    node["ssh"] = s.ssh;
    node["pid_file"] = s.pid_file;
  }
  return node;
}

// Throws YAML exceptions on a bad file; read_state_file turns them into a Status.
ServiceState decode_service(const YAML::Node& node) {
  ServiceState s;
  s.name = node["name"].as<std::string>();
  s.role = node["role"].as<std::string>();
  s.node = node["node"].as<std::string>();
  s.worker_index = node["worker_index"].as<int>();
  s.log_path = node["log"].as<std::string>();
  s.pid = static_cast<pid_t>(node["pid"].as<long>());
  s.start_ticks = node["start_ticks"].as<std::uint64_t>();
  std::string state = node["state"].as<std::string>();
  if (!run_state_from_name(state, &s.state)) {
    throw YAML::Exception(node["state"].Mark(), "unknown service state '" + state + "'");
  }
  s.restarts = node["restarts"].as<int>();
  s.started_at = node["started_at"].as<double>();
  s.last_exit = node["last_exit"].as<std::string>();
  if (node["step"]) s.step = node["step"].as<std::string>();
  if (node["ssh"]) {
    s.ssh = node["ssh"].as<std::vector<std::string>>();
    s.pid_file = node["pid_file"].as<std::string>();
  }
  return s;
}

}  // namespace

const char* run_state_name(ServiceRunState state) {
  for (const auto& entry : kRunStateNames) {
    if (entry.state == state) return entry.name;
  }
  return "?";
}

bool run_state_from_name(const std::string& name, ServiceRunState* state) {
  for (const auto& entry : kRunStateNames) {
    if (name == entry.name) {
      *state = entry.state;
      return true;
    }
  }
  return false;
}

std::string state_file_path(const std::string& state_dir) {
  return state_dir + "/state.yaml";
}

Status write_state_file(const std::string& state_dir, const ClusterState& state) {
  YAML::Node root;
  root["backend"] = state.backend;
  root["run_id"] = state.run_id;
  root["config"] = state.config_path;
  YAML::Node supervisor;
  supervisor["pid"] = static_cast<long>(state.supervisor_pid);
  supervisor["start_ticks"] = state.supervisor_start_ticks;
  supervisor["state"] = state.supervisor_state;
  supervisor["started_at"] = state.supervisor_started_at;
  if (!state.stop_reason.empty()) supervisor["stop_reason"] = state.stop_reason;
  root["supervisor"] = supervisor;
  root["drain_timeout_ms"] = state.drain_timeout_ms;
  YAML::Node services(YAML::NodeType::Sequence);
  for (const auto& s : state.services) services.push_back(encode_service(s));
  root["services"] = services;
  if (!state.slurm_job_id.empty()) {
    YAML::Node slurm;
    slurm["job_id"] = state.slurm_job_id;
    slurm["job_state"] = state.slurm_job_state;
    slurm["nodes"] = state.slurm_nodes;
    root["slurm"] = slurm;
  }

  YAML::Emitter out;
  out.SetDoublePrecision(17);
  out << root;
  return write_file_atomically(
      state_file_path(state_dir),
      std::string(
          "# dice-cluster state (written by the supervisor; see cluster/cluster_state.h)\n") +
          out.c_str() + "\n");
}

Result<ClusterState> read_state_file(const std::string& state_dir) {
  std::string path = state_file_path(state_dir);
  std::ifstream file(path);
  if (!file) {
    return Status::not_found("no cluster state at " + path +
                             " (no run was started with this state dir)");
  }
  std::stringstream text;
  text << file.rdbuf();
  try {
    YAML::Node root = YAML::Load(text.str());
    ClusterState state;
    if (root["backend"]) state.backend = root["backend"].as<std::string>();
    state.run_id = root["run_id"].as<std::string>();
    state.config_path = root["config"].as<std::string>();
    YAML::Node supervisor = root["supervisor"];
    state.supervisor_pid = static_cast<pid_t>(supervisor["pid"].as<long>());
    state.supervisor_start_ticks = supervisor["start_ticks"].as<std::uint64_t>();
    state.supervisor_state = supervisor["state"].as<std::string>();
    state.supervisor_started_at = supervisor["started_at"].as<double>();
    if (supervisor["stop_reason"]) state.stop_reason = supervisor["stop_reason"].as<std::string>();
    state.drain_timeout_ms = root["drain_timeout_ms"].as<int>();
    for (const auto& node : root["services"]) state.services.push_back(decode_service(node));
    if (YAML::Node slurm = root["slurm"]) {
      state.slurm_job_id = slurm["job_id"].as<std::string>();
      state.slurm_job_state = slurm["job_state"].as<std::string>();
      state.slurm_nodes = slurm["nodes"].as<std::string>();
    }
    if (state.backend != "local" && state.backend != "ssh" && state.backend != "slurm") {
      throw YAML::Exception(root["backend"].Mark(), "unknown backend '" + state.backend + "'");
    }
    return state;
  } catch (const YAML::Exception& e) {
    return Status::corruption(path + ":" + std::to_string(e.mark.line + 1) +
                              ": bad state file: " + e.msg);
  }
}

std::string run_id_from_clock() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y%m%d-%H%M%S", &tm);
  return buffer;
}

}  // namespace dice::cluster
