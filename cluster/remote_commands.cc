#include "cluster/remote_commands.h"

namespace dice::cluster {
namespace {

// The name the scripts run under ($0): what `ps` shows for the wrapper shell.
constexpr const char* kScriptName = "dice-cluster-remote";

// Seconds an ssh connection attempt may take, and the keep-alive period after which a silent
// server is probed (three unanswered probes end the client with 255, which the supervisor treats
// as a crash and restarts).
constexpr int kConnectTimeoutS = 10;
constexpr int kServerAliveIntervalS = 10;

// Shared by both scripts: `live FILE TAG` succeeds, with $p set to the pid, when FILE names a live
// process whose environment carries DICE_CLUSTER_SERVICE=TAG. A zombie has an empty environ.
constexpr const char* kLiveFunction =
    "live() { p=$(cat \"$1\" 2>/dev/null) && [ -n \"$p\" ] && "
    "tr '\\000' '\\n' 2>/dev/null < /proc/\"$p\"/environ | "
    "grep -qxF \"DICE_CLUSTER_SERVICE=$2\"; }\n";

// The start script; arguments PID_FILE TAG DIR DEVICES EXE ARGS... (see the header).
// Background jobs of a non-interactive shell get /dev/null as stdin, so the session's stdin is
// kept on fd 3 for the watcher.
constexpr const char* kStartScript =
    "pid_file=$1; tag=$2; dir=$3; devices=$4; shift 4\n"
    "mkdir -p \"${pid_file%/*}\" || exit 126\n"
    "if live \"$pid_file\" \"$tag\"; then\n"
    "  echo \"dice-cluster-remote: stopping an earlier $tag (pid $p) still running\" >&2\n"
    "  w=$(sed -n 's/^PPid:[[:space:]]*//p' /proc/\"$p\"/status 2>/dev/null)\n"
    "  kill -TERM \"$p\"; n=0\n"
    "  while live \"$pid_file\" \"$tag\" && [ $n -lt 10 ]; do sleep 1; n=$((n + 1)); done\n"
    "  live \"$pid_file\" \"$tag\" && kill -KILL \"$p\"\n"
    // The earlier copy's wrapper removes the pid file after reaping its service; it must be gone
    // before this copy writes its own, or it could remove the new one (its check-then-remove is
    // not atomic). A wrapper killed earlier left its service to init: nothing to wait for.
    "  n=0\n"
    "  while [ -n \"$w\" ] && grep -qsF \"$0\" /proc/\"$w\"/cmdline && [ $n -lt 100 ]; do\n"
    "    sleep 0.1; n=$((n + 1))\n"
    "  done\n"
    "fi\n"
    "cd \"$dir\" || exit 126\n"
    "if [ -n \"$devices\" ]; then CUDA_VISIBLE_DEVICES=$devices; export CUDA_VISIBLE_DEVICES; fi\n"
    "DICE_CLUSTER_SERVICE=$tag; export DICE_CLUSTER_SERVICE\n"
    "exec 3<&0\n"
    "\"$@\" </dev/null 3<&- &\n"
    "pid=$!\n"
    "echo \"$pid\" > \"$pid_file.tmp\" && mv -f \"$pid_file.tmp\" \"$pid_file\"\n"
    "(cat <&3; kill -TERM \"$pid\") >/dev/null 2>&1 &\n"
    "watcher=$!\n"
    "exec 3<&-\n"
    "wait \"$pid\"; status=$?\n"
    "kill \"$watcher\" 2>/dev/null\n"
    // A later copy (started after a lost link) may have written its own pid there already.
    "[ \"$(cat \"$pid_file\" 2>/dev/null)\" = \"$pid\" ] && rm -f \"$pid_file\"\n"
    "exit \"$status\"\n";

// The sweep script; arguments SIGNAL PID_FILE TAG [PID_FILE TAG ...].
constexpr const char* kSweepScript =
    "sig=$1; shift\n"
    "while [ $# -ge 2 ]; do\n"
    "  if live \"$1\" \"$2\"; then\n"
    "    [ \"$sig\" = 0 ] || kill -\"$sig\" \"$p\" 2>/dev/null\n"
    "    echo \"$2 $p\"\n"
    "  elif [ ! -d /proc/\"$p\" ]; then\n"
    "    rm -f \"$1\"\n"
    "  fi\n"
    "  shift 2\n"
    "done\n";

std::string sh_command(const std::string& script, const std::vector<std::string>& args) {
  std::string command =
      "sh -c " + shell_quote(std::string(kLiveFunction) + script) + " " + shell_quote(kScriptName);
  for (const auto& arg : args) command += " " + shell_quote(arg);
  return command;
}

}  // namespace

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

std::vector<std::string> ssh_prefix(const SshOptions& ssh, const std::string& ssh_exe,
                                    const std::string& host) {
  std::vector<std::string> argv = {ssh_exe};
  argv.insert(argv.end(), ssh.extra_args.begin(), ssh.extra_args.end());
  argv.insert(argv.end(), {"-T", "-o", "BatchMode=yes", "-o",
                           "ConnectTimeout=" + std::to_string(kConnectTimeoutS), "-o",
                           "ServerAliveInterval=" + std::to_string(kServerAliveIntervalS)});
  argv.push_back(ssh.user.empty() ? host : ssh.user + "@" + host);
  return argv;
}

std::string service_tag(const std::string& run_id, const std::string& service) {
  return run_id + "/" + service;
}

std::string remote_start_command(const ServiceSpec& spec, const std::string& pid_file,
                                 const std::string& tag, const std::string& work_dir) {
  std::vector<std::string> args = {pid_file, tag, work_dir, visible_devices(spec), spec.executable};
  args.insert(args.end(), spec.args.begin(), spec.args.end());
  return sh_command(kStartScript, args);
}

std::string remote_sweep_command(const std::string& signal,
                                 const std::vector<RemoteTarget>& targets) {
  std::vector<std::string> args = {signal};
  for (const auto& target : targets) {
    args.push_back(target.pid_file);
    args.push_back(target.tag);
  }
  return sh_command(kSweepScript, args);
}

}  // namespace dice::cluster
