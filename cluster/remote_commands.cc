#include "cluster/remote_commands.h"

#include <sstream>

namespace dice::cluster {

std::string shell_quote(const std::string& arg) {
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

std::vector<std::string> ssh_command(const ClusterOptions& options, int node_index,
                                     const std::string& remote_dir, const PlanInputs& inputs) {
  const NodeOptions& node = options.nodes.at(static_cast<std::size_t>(node_index));
  std::vector<std::string> argv = {"ssh"};
  argv.insert(argv.end(), options.ssh.extra_args.begin(), options.ssh.extra_args.end());
  argv.push_back(options.ssh.user.empty() ? node.host : options.ssh.user + "@" + node.host);
  std::string dir = options.ssh.remote_dir.empty() ? remote_dir : options.ssh.remote_dir;
  std::string remote = "cd " + shell_quote(dir) + " && dice-cluster-node up --config " +
                       shell_quote(inputs.config_path) + " --run-id " + shell_quote(inputs.run_id) +
                       " --node-index " + std::to_string(node_index);
  for (const auto& override_arg : inputs.overrides) remote += " " + shell_quote(override_arg);
  argv.push_back(remote);
  return argv;
}

}  // namespace dice::cluster
