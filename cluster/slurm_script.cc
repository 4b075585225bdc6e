#include "cluster/slurm_script.h"

#include <set>
#include <sstream>

#include "cluster/remote_commands.h"

namespace dice::cluster {
namespace {

// The shell functions every script shares; @KEY@ are filled from cluster.local's restart policy.
constexpr const char* kFunctions = R"BASH(
# record NAME STATE RESTARTS STARTED_AT LAST_EXIT: the step's state, read by `dice-cluster status`.
record() {
  printf 'state %s\nrestarts %s\nstarted_at %s\nlast_exit %s\n' "$2" "$3" "$4" "$5" \
    >"$steps/$1.tmp" && mv -f "$steps/$1.tmp" "$steps/$1"
}

# stop_run REASON...: say why the run ends in $steps/.stop_reason, which `dice-cluster status`
# shows, and end every other service's loop and its step. Each loop's pid is in $steps/.pid-NAME.
stop_run() {
  local f pid
  printf '%s\n' "$*" >"$steps/.stop_reason"
  for f in "$steps"/.pid-*; do
    pid="$(cat "$f")"
    [[ "$pid" == "$BASHPID" ]] && continue
    kill -TERM "$pid" 2>/dev/null
    pkill -TERM -P "$pid" 2>/dev/null  # its srun, which passes the signal on to the step
  done
}

# stop_if_role_is_gone NAME WHY: once every service of NAME's role has given up, the run cannot
# move (the learner would wait for verdicts until the time limit): stop it.
stop_if_role_is_gone() {
  local role="${1%-*}" f
  [[ "$role" == dash ]] && return 0  # dice-dash only reads the run's log: its end is not the run's
  for f in "$steps/$role"-*; do
    [[ "$f" == *.tmp ]] && continue
    grep -qx 'state failed' "$f" || return 0
  done
  stop_run "no $role service left: $1 gave up ($2); its log: $logs/$1.log"
}

# run_service NAME NODE [VAR=VALUE...] EXE [ARGS...]: runs the service (through env, with its
# CUDA_VISIBLE_DEVICES) as one step on NODE until it exits 0, the job is cancelled, it exits 2
# (bad input: it would fail the same way again, so the run stops), it needs more than
# @MAX_RESTARTS@ restarts within @WINDOW_S@ s, or it has been restarted @MAX_PER_RUN@ times in the
# run (0: no such cap) however far apart: the rules of the local supervisor (cluster/supervisor.cc).
run_service() {
  local name="$1" node="$2"
  shift 2
  local stopping=0 restarts=0 delay_ms=@BACKOFF_MS@ last_exit="" started rc now t
  local -a recent=() kept=()
  trap 'stopping=1' TERM INT
  echo "$BASHPID" >"$steps/.pid-$name"
  while ((!stopping)); do
    started="$(date +%s)"
    record "$name" running "$restarts" "$started" "$last_exit"
    echo "=== dice-cluster: $(date -u +%Y-%m-%dT%H:%M:%SZ) starting $name on $node" \
      "(restarts so far: $restarts): $*" >>"$logs/$name.log"
    srun --overlap --nodes=1 --ntasks=1 --nodelist="$node" --job-name="$name" \
      --output="$logs/$name.log" --open-mode=append env "$@"
    rc=$?
    last_exit="exit $rc"
    if ((stopping)); then break; fi
    if ((rc == 0)); then
      record "$name" exited "$restarts" "$started" "$last_exit"
      return
    fi
    if ((rc == 2 || rc == 3 || rc == 4)); then
      why="bad input: a missing or invalid file or setting"
      ((rc == 3)) && why="no disk space: a write it must make did not fit; free space, then resume"
      ((rc == 4)) && why="no device: its node has no GPU or toolchain it needs; fix the node or the plan, then resume"
      echo "=== dice-cluster: $name exited with status $rc (${why%%:*}), not restarted" \
        >>"$logs/$name.log"
      record "$name" failed "$restarts" "$started" "$last_exit"
      # dice-dash only reads the run's log: its end is not the run's
      [[ "${name%-*}" == dash ]] || stop_run "$name exited with status $rc ($why), not" \
        "restarted; its log: $logs/$name.log"
      return
    fi
    if ((@MAX_PER_RUN@ > 0 && restarts >= @MAX_PER_RUN@)); then
      echo "=== dice-cluster: giving up on $name after $restarts restarts in this run ($last_exit)" \
        >>"$logs/$name.log"
      record "$name" failed "$restarts" "$started" "$last_exit"
      stop_if_role_is_gone "$name" \
        "$last_exit after $restarts restarts in this run (cluster.local.max_restarts_per_run)"
      return
    fi
    now="$(date +%s)"
    kept=()
    for t in "${recent[@]}"; do ((now - t < @WINDOW_S@)) && kept+=("$t"); done
    recent=("${kept[@]}")
    if ((${#recent[@]} >= @MAX_RESTARTS@)); then
      echo "=== dice-cluster: giving up on $name after $restarts restarts ($last_exit)" \
        >>"$logs/$name.log"
      record "$name" failed "$restarts" "$started" "$last_exit"
      stop_if_role_is_gone "$name" "$last_exit"
      return
    fi
    recent+=("$now")
    restarts=$((restarts + 1))
    record "$name" restarting "$restarts" "$started" "$last_exit"
    sleep "$((delay_ms / 1000)).$(printf %03d $((delay_ms % 1000)))"
    delay_ms=$((delay_ms * 2 > @BACKOFF_MAX_MS@ ? @BACKOFF_MAX_MS@ : delay_ms * 2))
  done
  record "$name" stopped "$restarts" "$started" "$last_exit"
}
)BASH";

std::string fill(std::string text, const std::string& key, int value) {
  for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at)) {
    text.replace(at, key.size(), std::to_string(value));
  }
  return text;
}

}  // namespace

std::string slurm_batch_script(const ClusterOptions& options,
                               const std::vector<ServiceSpec>& services,
                               const std::string& work_dir, const std::string& state_dir,
                               const std::string& run_id) {
  const SlurmOptions& slurm = options.slurm;
  const LocalOptions& policy = options.local;
  std::set<std::string> hosts;
  for (const auto& spec : services) hosts.insert(spec.node);
  std::string nodelist;
  for (const auto& host : hosts) nodelist += (nodelist.empty() ? "" : ",") + host;

  std::ostringstream out;
  out << "#!/bin/bash\n"
      << "# dice run " << run_id << ": generated by dice-cluster (cluster/slurm_script.cc)\n"
      << "#SBATCH --job-name=dice-" << run_id << "\n"
      << "#SBATCH --partition=" << slurm.partition << "\n"
      << "#SBATCH --time=" << slurm.time_limit << "\n";
  if (!slurm.account.empty()) out << "#SBATCH --account=" << slurm.account << "\n";
  out << "#SBATCH --nodes=" << hosts.size() << "\n"
      << "#SBATCH --nodelist=" << nodelist << "\n"
      << "#SBATCH --ntasks-per-node=1\n"
      << "#SBATCH --output=" << state_dir << "/slurm-%j.out\n";
  for (const auto& arg : slurm.extra_args) out << "#SBATCH " << arg << "\n";
  out << "set -uo pipefail\n"
      << "cd " << shell_quote(work_dir) << " || exit 1\n"
      << "logs=" << shell_quote(state_dir + "/logs") << "\n"
      << "steps=" << shell_quote(state_dir + "/steps") << "\n"
      << "mkdir -p \"$logs\" \"$steps\" || exit 1\n";
  std::string functions = kFunctions;
  functions = fill(functions, "@BACKOFF_MS@", policy.restart_backoff_ms);
  functions = fill(functions, "@BACKOFF_MAX_MS@", policy.restart_backoff_max_ms);
  functions = fill(functions, "@MAX_RESTARTS@", policy.max_restarts);
  functions = fill(functions, "@WINDOW_S@", policy.restart_window_s);
  functions = fill(functions, "@MAX_PER_RUN@", policy.max_restarts_per_run);
  out << functions << "\n";
  // The run is its services without the dashboard: the job waits for those, then stops dice-dash
  // (which would otherwise serve on until the time limit), as the local supervisor does.
  bool dashboard = false;
  out << "run_pids=()\n";
  for (const auto& spec : services) {
    out << "run_service " << shell_quote(spec.name) << " " << shell_quote(spec.node) << " ";
    if (!visible_devices(spec).empty()) {
      out << shell_quote("CUDA_VISIBLE_DEVICES=" + visible_devices(spec)) << " ";
    }
    out << shell_quote(spec.executable);
    for (const auto& arg : spec.args) out << " " << shell_quote(arg);
    out << " &\n";
    if (spec.dashboard) {
      dashboard = true;
    } else {
      out << "run_pids+=($!)\n";
    }
  }
  if (dashboard) {
    out << "wait \"${run_pids[@]}\"\n"
        << "for f in \"$steps\"/.pid-dash-*; do\n"
        << "  pid=\"$(cat \"$f\")\"\n"
        << "  kill -TERM \"$pid\" 2>/dev/null\n"
        << "  pkill -TERM -P \"$pid\" 2>/dev/null  # its srun, which passes the signal on\n"
        << "done\n";
  }
  out << "wait\n";
  return out.str();
}

}  // namespace dice::cluster
