#!/bin/bash
# A throw-away single-node SLURM cluster for the tests (tests/slurm_test.cpp), everything in one folder:
#
#   slurm_cluster.sh start DIR [OWNER_PID]   start munged, slurmctld, slurmd; wait until the node is idle
#   slurm_cluster.sh stop DIR                cancel the jobs, stop the daemons, remove nothing else
#
# `start` writes DIR/slurm.conf and prints `SLURM_CONF=DIR/slurm.conf`: the client commands (srun,
# sbatch, squeue, scontrol, scancel) find the cluster through that variable, as on any cluster whose
# configuration is not in /etc/slurm. Nothing outside DIR is written: munged has its own key, socket,
# pid, seed and log files there (slurm.conf's AuthInfo=socket= points at that socket), and
# slurmctld/slurmd their state, spool, pid and log files. The ports are chosen free at start, and
# the cluster name is unique, so two test runs never meet. When OWNER_PID is given, a watchdog
# stops the cluster once that process is gone (a test killed by a timeout leaves no daemons behind).
# Runs as root (slurmd starts jobs as their user; a test cluster has only root). Needs no cgroups:
# proctrack/linuxproc and task/none; where /sys/fs/cgroup holds no cgroup filesystem (a chroot
# without /sys), DIR/cgroup.conf names the cgroup plugin that slurmd would otherwise fail to detect
# (see below). On failure `start` prints the daemons' log tails, stops what it started and exits 1.
#
# TWO_NODES="A B" (the environment of start and stop): a two-node cluster instead, over the
# network namespaces A and B that tests/test_util.h's TwoNodes makes (10.231.0.1 and 10.231.0.2,
# each namespace's /etc/hosts naming both): slurmctld and node A's slurmd in A, node B's slurmd in
# B, each under its node's hostname. The client commands must then run in A as well.
set -u

cmd=${1:-} dir=${2:-}
if [[ -z $cmd || -z $dir ]]; then
  echo "usage: $0 start|stop DIR [OWNER_PID]" >&2
  exit 2
fi
dir=$(realpath -m "$dir")
conf=$dir/slurm.conf
export SLURM_CONF=$conf

# Runs a command on node $1 of a two-node cluster (in its namespace, under its hostname).
read -r node_a node_b <<<"${TWO_NODES:-}"
on_node() {
  local n=$1
  shift
  ip netns exec "$n" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$n" "$@"
}
# A client command: in node A's namespace on a two-node cluster.
client() { if [[ -n $node_a ]]; then on_node "$node_a" "$@"; else "$@"; fi; }

tails() {
  for f in "$dir"/munge/munged.log "$dir"/slurmctld.log "$dir"/slurmd*.log "$dir"/*.stderr; do
    [[ -s $f ]] && { echo "--- tail of $f"; tail -n 25 "$f"; }
  done
}

stop_pids() {  # TERM the daemons whose pid files are given, then KILL what is left after 10 s
  local f pid pids=()
  for f in "$@"; do
    pid=$(cat "$f" 2>/dev/null) || continue
    [[ -n $pid && $pid != "$$" ]] && kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  done
  for _ in $(seq 100); do
    kill -0 "${pids[@]}" 2>/dev/null || return 0  # (true while any is alive)
    sleep 0.1
  done
  kill -KILL "${pids[@]}" 2>/dev/null
  return 0
}

# Processes started by this cluster's jobs: their environment names this slurm.conf (sbatch and
# srun pass the submitter's environment on). Used only to clean up after a daemon was killed.
job_pids() {
  local p
  for p in /proc/[0-9]*; do
    [[ ${p#/proc/} == "$$" ]] && continue
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "SLURM_CONF=$conf" && echo "${p#/proc/}"
  done
}

stop() {
  if [[ -f $dir/slurmctld.pid ]] && kill -0 "$(cat "$dir/slurmctld.pid")" 2>/dev/null; then
    client scancel --full --quiet --user=root 2>/dev/null
    for _ in $(seq 50); do [[ -z $(client squeue -h -o %i 2>/dev/null) ]] && break; sleep 0.2; done
  fi
  # Each takes ~2 s to shut down: all at once.
  stop_pids "$dir/watchdog.pid" "$dir"/slurmd*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"
  local left
  mapfile -t left < <(job_pids)
  ((${#left[@]})) && kill -KILL "${left[@]}" 2>/dev/null
  return 0
}

# Whether slurmd's cgroup autodetection (slurm 22.05, src/interfaces/cgroup.c
# autodetect_cgroup_version) finds a version: cgroup2 on /sys/fs/cgroup, or a tmpfs there with
# cgroup v1 or v2 on its systemd/ (and, for v2, an unified/).
cgroup_detectable() {
  case $(stat -f -c %T /sys/fs/cgroup/ 2>/dev/null) in
    cgroup2fs) return 0 ;;
    tmpfs)
      case $(stat -f -c %T /sys/fs/cgroup/systemd/ 2>/dev/null) in
        cgroupfs) return 0 ;;
        cgroup2fs) stat -f /sys/fs/cgroup/unified/ >/dev/null 2>&1 ;;
        *) return 1 ;;
      esac ;;
    *) return 1 ;;
  esac
}

free_port() {  # a TCP port nobody listens on, from a range clear of the ephemeral one
  local p
  while :; do
    p=$((20000 + RANDOM % 12000))
    [[ -z $(ss -Htln "sport = :$p") ]] && echo $p && return
  done
}

start() {
  mkdir -p "$dir"/munge "$dir"/state
  chmod 700 "$dir" "$dir"/munge
  # munged: its own 1024-byte key, socket, pid, seed and log files (it insists on a 0600 key and
  # on directories nobody else can write). --force: munged also wants every directory above its
  # socket executable by all, which a 0700 temp folder is not; only root uses this cluster.
  dd if=/dev/urandom of="$dir"/munge/munge.key bs=1024 count=1 status=none
  chmod 600 "$dir"/munge/munge.key
  if ! munged --force --socket="$dir"/munge/munge.socket --key-file="$dir"/munge/munge.key \
      --pid-file="$dir"/munge/munged.pid --seed-file="$dir"/munge/munged.seed \
      --log-file="$dir"/munge/munged.log </dev/null >"$dir"/munged.stderr 2>&1; then
    echo "munged did not start" >&2
    tails >&2
    return 1
  fi

  local host node ctld_port slurmd_port ctld_addr=127.0.0.1 nodes
  host=$(hostname -s)
  # The node name is the first host of SLURM_NODELIST, which trainrun uses as MASTER_ADDR:
  # it must resolve to this machine.
  node=$host
  getent hosts "$node" >/dev/null || node=localhost
  nodes="NodeName=$node NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP"
  if [[ -n $node_a ]]; then
    host=$node_a ctld_addr=10.231.0.1
    nodes="NodeName=$node_a NodeAddr=10.231.0.1 CPUs=1 State=UNKNOWN
NodeName=$node_b NodeAddr=10.231.0.2 CPUs=1 State=UNKNOWN
PartitionName=test Nodes=$node_a,$node_b Default=YES MaxTime=INFINITE State=UP"
  fi
  local n
  for n in ${node_a:-$node} $node_b; do mkdir -p "$dir/spool-$n"; done
  ctld_port=$(free_port)
  slurmd_port=$(free_port)
  while [[ $slurmd_port == "$ctld_port" ]]; do slurmd_port=$(free_port); done

  cat >"$conf" <<EOF
# Generated by tests/launchers/slurm_cluster.sh for one test run.
ClusterName=trtest$$
SlurmctldHost=$host($ctld_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire: a requeued job may start again only cred_expire + 1 s after the requeue
# (default 120 s); 10 s keeps the pre-emption test short.
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: processes tracked through /proc, tasks not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/builtin
# A requeued job is started by the periodic pass (every 60 s by default), not at once.
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
# CPUs=2 below even on a 1-core machine (no "Low CPU count" drain).
SlurmdParameters=config_overrides
JobRequeue=1
KillWait=10
$nodes
EOF

  # slurmd loads a cgroup plugin even when no plugin in use needs cgroups; by default the one
  # autodetected from /sys/fs/cgroup, and it refuses to start when that finds none ("cgroup
  # filesystem not mounted in /sys/fs/cgroup/": a chroot or container without /sys). Named here,
  # cgroup/v1 loads without touching /sys/fs/cgroup (only the cgroup proctrack/task/jobacct_gather
  # plugins would use it). Left to autodetection wherever that works.
  rm -f "$dir"/cgroup.conf
  # `ip netns exec` mounts a sysfs of the namespace's own, without /sys/fs/cgroup: on two nodes too.
  if [[ -n $node_a ]] || ! cgroup_detectable; then
    printf '%s\n' "# Generated by tests/launchers/slurm_cluster.sh: /sys/fs/cgroup has no cgroup filesystem." \
      "CgroupPlugin=cgroup/v1" >"$dir"/cgroup.conf
  fi

  local started=0 idle=idle
  if [[ -n $node_a ]]; then
    idle=$'idle\nidle'
    on_node "$node_a" slurmctld -f "$conf" </dev/null >"$dir"/slurmctld.stderr 2>&1 &&
      on_node "$node_a" slurmd -f "$conf" -N "$node_a" </dev/null >"$dir"/slurmd-a.stderr 2>&1 &&
      on_node "$node_b" slurmd -f "$conf" -N "$node_b" </dev/null >"$dir"/slurmd-b.stderr 2>&1 && started=1
  else
    slurmctld -f "$conf" </dev/null >"$dir"/slurmctld.stderr 2>&1 &&
      slurmd -f "$conf" -N "$node" </dev/null >"$dir"/slurmd.stderr 2>&1 && started=1
  fi
  if ((!started)); then
    echo "slurmctld or slurmd did not start" >&2
    tails >&2
    stop
    return 1
  fi

  local state=""
  for _ in $(seq 300); do
    state=$(client sinfo -h -N -o %T 2>/dev/null)
    [[ $state == "$idle" ]] && break
    sleep 0.1
  done
  if [[ $state != "$idle" ]]; then
    echo "the SLURM node did not come up idle in 30 s (sinfo: '${state}')" >&2
    tails >&2
    stop
    return 1
  fi

  local owner=${3:-}
  if [[ -n $owner ]]; then
    # shellcheck disable=SC2016  # $0..$2 are the inner shell's
    setsid bash -c 'while kill -0 "$2" 2>/dev/null; do sleep 1; done; exec "$0" stop "$1"' \
      "$(realpath "$0")" "$dir" "$owner" </dev/null >/dev/null 2>&1 &
    echo $! >"$dir"/watchdog.pid
  fi
  echo "SLURM_CONF=$conf"
}

case $cmd in
  start) start "$@" ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR [OWNER_PID]" >&2; exit 2 ;;
esac
