#include "cluster/service_plan.h"

#include <unistd.h>

#include <cstdlib>
#include <sstream>

namespace dice::cluster {
namespace {

bool is_executable_file(const std::string& path) {
  return access(path.c_str(), X_OK) == 0;
}

std::string folder_of(const std::string& path) {
  std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string remote_executable(const LocalOptions& local, NodeRole role) {
  std::string role_name = config::enum_to_name(role);
  auto chosen = local.executables.find(role_name);
  std::string name = chosen != local.executables.end() ? chosen->second : "dice-" + role_name;
  if (name.find('/') != std::string::npos || local.bin_dir.empty()) return name;
  return local.bin_dir + "/" + name;
}

}  // namespace

int metrics_port(const ClusterOptions& options, NodeRole role, int worker_index) {
  int base = options.learner.metrics_port;
  if (role == NodeRole::kRollout) base = options.worker_metrics.rollout_base_port;
  if (role == NodeRole::kReward) base = options.worker_metrics.reward_base_port;
  if (role == NodeRole::kLearner || base == 0) return base;
  return base + worker_index;
}

namespace {

// `name` as is when it holds a '/', else the first executable of that name in `folders`, then
// PATH. `what` names it in the error, `settings` the keys that choose it.
Result<std::string> search_executable(const std::string& name, std::vector<std::string> folders,
                                      const std::string& what, const std::string& settings) {
  if (name.find('/') != std::string::npos) {
    if (is_executable_file(name)) return name;
    return Status::not_found(what + " '" + name + "' does not exist or is not executable");
  }
  std::size_t explicit_folders = folders.size();
  if (const char* path = std::getenv("PATH")) {
    std::stringstream entries(path);
    std::string entry;
    while (std::getline(entries, entry, ':')) {
      if (!entry.empty()) folders.push_back(entry);
    }
  }
  for (const auto& folder : folders) {
    std::string candidate = folder + "/" + name;
    if (is_executable_file(candidate)) return candidate;
  }
  std::string searched;
  for (std::size_t i = 0; i < explicit_folders; ++i) searched += " " + folders[i];
  searched += explicit_folders > 0 ? " and PATH" : " PATH";
  return Status::not_found("no executable '" + name + "' for " + what + " (searched:" + searched +
                           "); build it, or set " + settings);
}

// bin_dir, dice-cluster's folder and `build_folder` under the build tree, in that order.
std::vector<std::string> search_folders(const LocalOptions& local, const std::string& self_exe,
                                        const std::string& build_folder) {
  std::vector<std::string> folders;
  if (!local.bin_dir.empty()) folders.push_back(local.bin_dir);
  if (!self_exe.empty()) {
    folders.push_back(folder_of(self_exe));
    folders.push_back(folder_of(self_exe) + "/../" + build_folder);
  }
  return folders;
}

}  // namespace

Result<std::string> find_executable(const LocalOptions& local, NodeRole role,
                                    const std::string& self_exe) {
  std::string role_name = config::enum_to_name(role);
  auto chosen = local.executables.find(role_name);
  std::string name = chosen != local.executables.end() ? chosen->second : "dice-" + role_name;
  Result<std::string> found =
      search_executable(name, search_folders(local, self_exe, role_name), "role " + role_name,
                        "cluster.local.bin_dir / cluster.local.executables");
  if (!found.ok() && chosen != local.executables.end()) {
    return found.status().with_context("cluster.local.executables");
  }
  return found;
}

Result<ServiceSpec> plan_dashboard(const ClusterOptions& options,
                                   const std::string& reward_log_path,
                                   const std::string& self_exe) {
  ServiceSpec spec;
  spec.name = "dash-0";
  spec.role = NodeRole::kLearner;
  spec.dashboard = true;
  for (const auto& node : options.nodes) {
    for (NodeRole role : node.roles) {
      if (role == NodeRole::kLearner) spec.node = node.host;
    }
  }
  DICE_ASSIGN_OR_RETURN(
      spec.executable,
      search_executable("dice-dash", search_folders(options.local, self_exe, "tools/dice-dash"),
                        "cluster.dash", "cluster.local.bin_dir"));
  spec.args = {"--bind", options.dash.bind_address, "--port", std::to_string(options.dash.port)};
  if (!options.dash.token_file.empty()) {
    spec.args.insert(spec.args.end(), {"--token-file", options.dash.token_file});
  }
  spec.args.push_back(reward_log_path);
  return spec;
}

std::string dashboard_url(const ClusterOptions& options) {
  std::string host = options.dash.bind_address;
  if (host == "0.0.0.0" || host == "::") host = options.learner.host;
  if (host.find(':') != std::string::npos) host = "[" + host + "]";
  return "http://" + host + ":" + std::to_string(options.dash.port) + "/";
}

Result<std::vector<ServiceSpec>> plan_services(const ClusterOptions& options,
                                               const PlanInputs& inputs) {
  std::vector<ServiceSpec> services;
  int next_index[3] = {0, 0, 0};
  for (const auto& node : options.nodes) {
    for (NodeRole role : node.roles) {
      std::string role_name = config::enum_to_name(role);
      std::string exe;
      if (inputs.resolve_locally) {
        DICE_ASSIGN_OR_RETURN(exe, find_executable(options.local, role, inputs.self_exe));
      } else {
        exe = remote_executable(options.local, role);
      }
      auto gpus_entry = node.gpus.find(role_name);
      std::vector<int> gpus =
          gpus_entry == node.gpus.end() ? std::vector<int>{} : gpus_entry->second;
      // The learner trains on all of its GPUs; a worker runs per GPU entry.
      std::vector<std::vector<int>> instances;
      if (role == NodeRole::kLearner) {
        instances.push_back(gpus);
      } else {
        for (int gpu : gpus) instances.push_back({gpu});
      }
      for (auto& instance_gpus : instances) {
        ServiceSpec spec;
        spec.role = role;
        spec.node = node.host;
        spec.worker_index = next_index[static_cast<int>(role)]++;
        spec.name = role_name + "-" + std::to_string(spec.worker_index);
        spec.gpus = std::move(instance_gpus);
        spec.executable = exe;
        spec.metrics_port = metrics_port(options, role, spec.worker_index);
        spec.args = {"--config",       inputs.config_path,
                     "--run-id",       inputs.run_id,
                     "--worker-index", std::to_string(spec.worker_index),
                     "--metrics-port", std::to_string(spec.metrics_port)};
        // A learner the supervisor restarts continues the run (docs/RESUME.md); on the first
        // start the run id is new and --resume starts it.
        if (role == NodeRole::kLearner) spec.args.push_back("--resume");
        spec.args.insert(spec.args.end(), inputs.overrides.begin(), inputs.overrides.end());
        services.push_back(std::move(spec));
      }
    }
  }
  return services;
}

std::string visible_devices(const ServiceSpec& spec) {
  std::string out;
  for (int gpu : spec.gpus) out += (out.empty() ? "" : ",") + std::to_string(gpu);
  return out;
}

}  // namespace dice::cluster
