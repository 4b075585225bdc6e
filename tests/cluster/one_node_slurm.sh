#!/usr/bin/env bash
# A private one-node Slurm (Debian's slurm-wlm) for the integration tests, everything under DIR:
#
#   one_node_slurm.sh start DIR CTLD_PORT SLURMD_PORT [OWNER_PID]  # prints SLURM_CONF=...
#   one_node_slurm.sh stop DIR                                     # by pid files; safe twice
#
# With OWNER_PID, a watchdog stops the daemons once that process is gone, so a test that crashes
# or is killed (no teardown) still leaves no Slurm behind.
#
# Its own munged (own key, socket and pid file under DIR/munge), so it neither needs nor disturbs a
# system munged or another test's Slurm; the ports are the caller's (free ones). Runs as root:
# SlurmUser/SlurmdUser root, proctrack/linuxproc and task/none need no cgroups. `start` returns
# once sinfo shows the node idle, or fails (exit 1, with the daemons' log tails) after 60 s.
set -euo pipefail
self="$(readlink -f "${BASH_SOURCE[0]}")"
# The daemons live in /usr/sbin, which a non-login root shell may not have on PATH.
export PATH="$PATH:/usr/sbin:/sbin"

usage() {
  echo "usage: $0 start DIR CTLD_PORT SLURMD_PORT [OWNER_PID] | stop DIR" >&2
  exit 2
}

stop() {
  local dir="$1" pid_file pid
  local -a pids=()
  for pid_file in "$dir/run/slurmd.pid" "$dir/run/slurmctld.pid" "$dir/munge/munged.pid"; do
    [[ -s "$pid_file" ]] || continue
    pid="$(cat "$pid_file")"
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  # All at once: slurmctld alone takes about 2 s to shut down. SIGKILL what is left after 10 s.
  for pid in "${pids[@]}"; do
    for _ in $(seq 200); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

fail() {
  local dir="$1"
  shift
  echo "one_node_slurm: $*" >&2
  for log in "$dir"/log/*.log "$dir/munge/munged.log"; do
    [[ -f "$log" ]] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
  stop "$dir"
  exit 1
}

start() {
  local dir="$1" ctld_port="$2" slurmd_port="$3" owner="${4:-}"
  local host cpus
  host="$(hostname -s)"
  cpus="$(nproc)"
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || fail "$dir" "$tool not on PATH (apt-get install slurm-wlm munge)"
  done
  mkdir -p "$dir"/{munge,state,spool,run,log}
  chmod 0700 "$dir/munge"

  # munged refuses a key or socket folder others can write to; a fresh key keeps it private.
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile="$dir/munge/munge.key" 2>/dev/null ||
      fail "$dir" "mungekey --create failed"
  else
    dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 0600 "$dir/munge/munge.key"
  munged --force --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
    --seed-file="$dir/munge/munged.seed" || fail "$dir" "munged did not start"

  cat >"$dir/slurm.conf" <<EOF
# One-node test Slurm written by tests/cluster/one_node_slurm.sh
ClusterName=dicetest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=dicetest Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$dir/slurm.conf"
  slurmctld -f "$SLURM_CONF" || fail "$dir" "slurmctld did not start"
  slurmd -f "$SLURM_CONF" || fail "$dir" "slurmd did not start"

  local deadline=$((SECONDS + 60)) state=""
  while ((SECONDS < deadline)); do
    state="$(sinfo -h -N -n "$host" -o %t 2>/dev/null || true)"
    if [[ "$state" == "idle" ]]; then
      if [[ -n "$owner" ]]; then
        # Checks once a second: a watchdog, not a readiness wait. The inner script's $1..$3 are
        # its own arguments, hence the single quotes.
        # shellcheck disable=SC2016
        setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; bash "$2" stop "$3"' \
          watchdog "$owner" "$self" "$dir" </dev/null >/dev/null 2>&1 &
      fi
      echo "SLURM_CONF=$SLURM_CONF"
      return 0
    fi
    sleep 0.2
  done
  fail "$dir" "node $host not idle within 60 s (sinfo state: '${state:-none}')"
}

case "${1:-}" in
start)
  [[ $# -eq 4 || $# -eq 5 ]] || usage
  start "$2" "$3" "$4" "${5:-}"
  ;;
stop)
  [[ $# -eq 2 ]] || usage
  stop "$2"
  ;;
*) usage ;;
esac
